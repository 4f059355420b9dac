import Foundation
import ReelConsole
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

/// What a program hands `reel`'s commands: its name, its reducers (offline time travel and
/// `import` fold with them, not with the stock reducer), the daemon to run for `serve`, and where
/// output goes.
///
/// The stock `reel` uses the stock JSON reducer; an app built on Reel passes its own
/// ``StoreDefinition`` to ``ReelTool/main(_:)`` and gets every command for its own state.
public struct ToolContext: Sendable {
    /// The program's name in help and messages: `reel`, or the app's executable.
    public var programName: String
    /// The process environment: `REEL_SOCKET`, `NO_COLOR`, `TERM`.
    public var environment: [String: String]
    /// Where results go, and where messages and progress go.
    public var standardOutput: any TextOutputSink
    public var standardError: any TextOutputSink
    /// Whether the outputs are terminals (color, progress bars); tests set these.
    public var standardOutputIsTerminal: Bool
    public var standardErrorIsTerminal: Bool
    /// The reducers' name and version.
    public let reducer: ReducerIdentity
    /// What each action type of the program's reducers accepts (`reel dispatch --help`).
    public let actions: [ActionDescription]
    let openOffline: @Sendable (String) throws(ToolError) -> any StoreSource
    let openImport: @Sendable (String, ImportSettings) throws(ToolError) -> any ImportTarget
    /// Folds a slice with this program's reducers as recorded, redacting the given paths
    /// (`testgen`, `bundle`).
    let foldSlice: @Sendable (HistorySlice, [String]) throws(ToolError) -> FoldedSlice
    /// This program's reducers folding a data directory for a shadow replay.
    let openShadow: @Sendable (String) throws(ToolError) -> any LocalShadow
    /// This program's reducers reading a data directory's whole history (`check-history`), with
    /// the seq reached now and then.
    let checkHistory: @Sendable (String, @escaping (UInt64) -> Void) throws(ToolError) -> HistoryCheck
    /// Writes `testgen`'s file for a slice, folding it with this program's reducers.
    let writeTest: @Sendable (HistorySlice, TestgenOptions) throws(ToolError) -> String
    /// Where a test `testgen` writes finds these reducers: the stock reducer's for the stock
    /// definition; an app says its own (``ReelApp``), or `testgen --module --definition` does.
    public var testgenTarget: TestgenTarget?
    /// Runs the daemon with the given command line (program name first); `nil` when the program
    /// offers no `serve` command (the stock `reel`: the stock daemon is `reeld`).
    public var serve: (@Sendable ([String]) async -> Int32)?
    /// What the current run opened, to close when it ends.
    var opened = OpenedSources()

    /// A context for `definition`, writing to the process's standard output and error.
    public init<State: StoreState>(
        definition: StoreDefinition<State>, programName: String = "reel",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.programName = programName
        self.environment = environment
        standardOutput = FileDescriptorSink.standardOutput
        standardError = FileDescriptorSink.standardError
        standardOutputIsTerminal = FileDescriptorSink.standardOutput.isTerminal
        standardErrorIsTerminal = FileDescriptorSink.standardError.isTerminal
        reducer = definition.identity
        actions = definition.actionDescriptions
        openOffline = { path throws(ToolError) in try OfflineSource(path: path, definition: definition) }
        openImport = { path, settings throws(ToolError) in
            try StoreImportTarget(path: path, definition: definition, settings: settings)
        }
        foldSlice = { slice, redactions throws(ToolError) in try SliceFolder(definition: definition).fold(slice, redacting: redactions) }
        openShadow = { path throws(ToolError) in try LocalShadowSide(path: path, definition: definition) }
        writeTest = { slice, options throws(ToolError) in try TestgenWriter(definition: definition).write(slice, options: options) }
        testgenTarget = definition.identity == StoreDefinition<JSONValue>.stock.identity ? .stock : nil
        checkHistory = { path, progress throws(ToolError) in
            let directory = try DataDirectory.openForReading(path, foldedWith: definition)
            do throws(StoreError) {
                return try Timeline(directory: directory, definition: definition).checkHistory(progress: progress)
            } catch {
                throw ToolError(error)
            }
        }
    }

    /// The context commands run in: set by ``ReelTool/run(_:context:)`` for the command it runs.
    @TaskLocal static var current = ToolContext(definition: .stock)
}
