import ArgumentParser
import Foundation
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel testgen --from A --to B`: a Swift Testing file, on stdout, that replays seqs A…B through
/// the reducers and expects the recorded state after each.
struct TestgenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "testgen", abstract: "Write a Swift Testing file that replays a slice of history through the reducers.",
        discussion: """
            The file (on stdout) starts from the state recorded at seq FROM-1, folds each action of \
            FROM…TO through the reducers as a replay does (HistoryReplay, in the ReelTesting \
            library) and after each expects the recorded state: the whole state, or the parts \
            named with --path. The start state is written whole (a reducer may read any of it), \
            into the test or, with --state-file, into a JSON file the test reads from beside \
            itself; each step as the JSON Patch of what it changed, so a step is as long as its \
            change. \
            It compiles in a test target that depends on ReelTesting, ReelCore, ReelJSON and the \
            module of the reducers, passes against the reducers that recorded the history, and \
            fails with the seq, the action and each differing field when their behaviour on those \
            actions changes. --redact P replaces the values at P (a JSON Pointer; * matches any \
            member or index) in the state and in every payload with placeholders, the same \
            placeholder for the same value. These reducers must reproduce the recorded state at \
            TO: run it with the program that recorded the history.
            """
    )

    /// A start state larger than this, written into the test, slows its compilation: a note
    /// points at `--state-file`.
    static let inlineStateLimit = 256 << 10

    /// A slice longer than this makes a file too long to compile in reasonable time.
    static let maxActions: UInt64 = 100_000

    @OptionGroup var slice: SliceOptions
    @Option(name: .customLong("path"), help: ArgumentHelp("Compare only this part of the state after each action (repeatable).", valueName: "pointer"))
    var paths: [String] = []
    @Option(name: .customLong("state-file"), help: ArgumentHelp("Write the start state to this JSON file, which the test reads from beside itself, instead of into the test.", valueName: "file"))
    var stateFile: String?
    @Option(help: ArgumentHelp("The test suite's name (a Swift type name).", valueName: "name"))
    var name: String?
    @Option(help: ArgumentHelp("The module the test imports for the reducers (default: the program's own, when it says).", valueName: "module"))
    var module: String?
    @Option(help: ArgumentHelp("The Swift expression of the reducers' StoreDefinition (default: the program's own, when it says).", valueName: "expression"))
    var definition: String?
    @OptionGroup var source: SourceOptions

    var from: SeqArgument { slice.from }
    var to: SeqArgument { slice.to }
    var redactions: [String] { slice.redactions }

    func validate() throws {
        try slice.check(maxActions: Self.maxActions, limit: "write a test of at most", paths: paths)
        if let name, !Self.isTypeName(name) { throw ValidationError("--name '\(name)' is not a Swift type name (letters, digits and _, not starting with a digit)") }
    }

    func run() async throws {
        let context = ToolContext.current
        guard let target = Self.target(module: module, definition: definition, default: context.testgenTarget) else {
            throw ToolError(
                "\(context.programName) does not say how a test builds its reducers: give --module (the module to import) and --definition (the Swift expression of its StoreDefinition)",
                exitStatus: ExitStatus.usage
            )
        }
        let store = try await source.open()
        let latest = try await store.latestSeq()
        guard to.value <= latest else {
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(to.value) is beyond the latest seq \(latest)"))
        }
        try await HistorySlice.checkRecordedBySameReducers(store, around: from.value...to.value, reducer: context.reducer, to: "write the test")
        let slice = try await HistorySlice.read(from: store, after: from.value - 1, through: to.value)
        let options = TestgenOptions(
            target: target, paths: paths, redactions: redactions, suiteName: name ?? "RecordedHistory\(from.value)To\(to.value)",
            commandLine: commandLine, reducer: context.reducer, stateFile: stateFile
        )
        let printer = source.output.printer
        let startBytes = slice.startState.jsonString.utf8.count
        if stateFile == nil, startBytes > Self.inlineStateLimit {
            printer.note("the state at seq \(from.value - 1) is written into the test whole (\(startBytes / 1024) KiB): --state-file FILE keeps it in a JSON file beside it")
        }
        printer.raw(try context.writeTest(slice, options))
    }

    /// What the file's first line says wrote it.
    private var commandLine: String {
        var words = [ToolContext.current.programName, "testgen", "--from", "\(from.value)", "--to", "\(to.value)"]
        for path in paths { words += ["--path", path] }
        for path in redactions { words += ["--redact", path] }
        if let stateFile { words += ["--state-file", URL(fileURLWithPath: stateFile).lastPathComponent] }
        return words.joined(separator: " ")
    }

    static func target(module: String?, definition: String?, default given: TestgenTarget?) -> TestgenTarget? {
        switch (module, definition, given) {
        case (let module?, let definition?, _): TestgenTarget(module: module, definition: definition)
        case (nil, nil, let given?): given
        case (let module?, nil, let given?): TestgenTarget(module: module, definition: given.definition)
        case (nil, let definition?, let given?): TestgenTarget(module: given.module, definition: definition)
        default: nil
        }
    }

    static func isTypeName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.properties.isAlphabetic && first.isASCII) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }
}
