import ArgumentParser
import Foundation
import ReelConsole
import ReelJSON

/// The options every command that reads or writes a store takes: where the store is, and how to
/// print.
struct SourceOptions: ParsableArguments {
    static var defaultSocketPath: String { ReelTool.defaultSocketPath }

    @Option(
        name: .customLong("socket"),
        help: ArgumentHelp("The daemon's Unix socket (default: $REEL_SOCKET, or \(defaultSocketPath)).", valueName: "path")
    )
    var socket: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Work offline on this data directory, opened read-only: safe while a daemon runs on it.", valueName: "path")
    )
    var dataDir: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        if socket != nil && dataDir != nil {
            throw ValidationError("--socket and --data-dir exclude each other: talk to a daemon, or read a data directory")
        }
    }

    /// The socket to use: the flag, then `$REEL_SOCKET`, then the default.
    var socketPath: String {
        socket ?? ToolContext.current.environment["REEL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultSocketPath
    }

    /// Opens the store the options name: the data directory offline, or a connection to the daemon.
    func open() async throws(ToolError) -> any StoreSource {
        let source: any StoreSource
        if let dataDir {
            source = try ToolContext.current.openOffline(dataDir)
        } else {
            source = try await LiveSource.connect(socketPath: socketPath, programName: ToolContext.current.programName)
        }
        ToolContext.current.opened.add(source)
        return source
    }
}

/// How to print: for people (the default) or for scripts.
struct OutputOptions: ParsableArguments {
    @Flag(name: .customLong("json"), help: "Print machine-readable output: one JSON value per line.")
    var json = false

    @Option(
        name: .customLong("color"),
        help: ArgumentHelp("auto (color on a terminal unless NO_COLOR is set), always or never.", valueName: "when")
    )
    var color: ColorChoice = .auto

    var printer: Printer { Printer(context: ToolContext.current, json: json, color: color) }
}

extension ColorChoice: ExpressibleByArgument {}

/// Reads a seq from the command line.
struct SeqArgument: ExpressibleByArgument, Sendable {
    var value: UInt64

    init?(argument: String) {
        guard let value = UInt64(argument) else { return nil }
        self.value = value
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// Reads a JSON Pointer from the command line.
struct PointerArgument: ExpressibleByArgument, Sendable {
    var pointer: JSONPointer

    init?(argument: String) {
        guard let pointer = try? JSONPointer(argument) else { return nil }
        self.pointer = pointer
    }
}
