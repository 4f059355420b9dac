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

    @Option(
        name: .customLong("bundle"),
        help: ArgumentHelp("Read this bundle (what `bundle` writes), replayed with this program's reducers.", valueName: "file")
    )
    var bundle: String?

    @OptionGroup var output: OutputOptions

    var location: StoreLocation { StoreLocation(socket: socket, dataDir: dataDir, bundle: bundle) }

    func validate() throws {
        try location.validate()
    }

    /// The socket to use: the flag, then `$REEL_SOCKET`, then the default.
    var socketPath: String { location.socketPath }

    /// Opens the store the options name: the data directory or the bundle offline, or a
    /// connection to the daemon.
    func open() async throws(ToolError) -> any StoreSource {
        try await location.open()
    }
}

/// The options of the commands that write (`dispatch`, `revert`): only a daemon can take a
/// write, so `--data-dir` is not offered in their help. It is still read (hidden), so that a
/// `--data-dir` given out of habit, or before the command, gets the clear refusal "dispatching
/// needs a running daemon" rather than "unknown option".
struct DaemonSourceOptions: ParsableArguments {
    @Option(
        name: .customLong("socket"),
        help: ArgumentHelp("The daemon's Unix socket (default: $REEL_SOCKET, or \(SourceOptions.defaultSocketPath)).", valueName: "path")
    )
    var socket: String?

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("Refused: writing needs a running daemon.", valueName: "path", visibility: .hidden))
    var dataDir: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        try StoreLocation(socket: socket, dataDir: dataDir).validate()
    }

    /// The daemon; with `--data-dir`, the refusal (exit 64), before the directory is opened.
    func open() async throws(ToolError) -> any StoreSource {
        if let dataDir {
            throw ToolError(
                "dispatching needs a running daemon: the data directory \(dataDir) would only be read. Drop --data-dir to use the daemon's socket",
                exitStatus: ExitStatus.usage
            )
        }
        return try await StoreLocation(socket: socket, dataDir: nil).open()
    }
}

/// The options of `reel ui`: where the store is. It prints only the page's URL, so `--json` and
/// `--color` have nothing to act on: they are read (hidden) so that `reel --json ui` is refused
/// with a reason rather than as an unknown option.
struct PageSourceOptions: ParsableArguments {
    @Option(
        name: .customLong("socket"),
        help: ArgumentHelp("The daemon's Unix socket (default: $REEL_SOCKET, or \(SourceOptions.defaultSocketPath)).", valueName: "path")
    )
    var socket: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "Work offline on this data directory, opened read-only: safe while a daemon runs on it.", valueName: "path")
    )
    var dataDir: String?

    @Option(
        name: .customLong("bundle"),
        help: ArgumentHelp("Read this bundle (what `bundle` writes), replayed with this program's reducers.", valueName: "file")
    )
    var bundle: String?

    @Flag(name: .customLong("json"), help: ArgumentHelp("Refused: the page has no JSON output.", visibility: .hidden))
    var json = false

    @Option(name: .customLong("color"), help: ArgumentHelp("Ignored: nothing is colored.", valueName: "when", visibility: .hidden))
    var color: ColorChoice = .auto

    func validate() throws {
        if json {
            throw ValidationError("--json: ui prints only the page's URL; the page's JSON API is described in docs/TIME-TRAVEL.md")
        }
        try StoreLocation(socket: socket, dataDir: dataDir, bundle: bundle).validate()
    }

    func open() async throws(ToolError) -> any StoreSource {
        try await StoreLocation(socket: socket, dataDir: dataDir, bundle: bundle).open()
    }
}

/// Where the store is: a daemon's socket, a data directory, or a bundle.
struct StoreLocation {
    var socket: String?
    var dataDir: String?
    var bundle: String?

    func validate() throws {
        let given = [("--socket", socket), ("--data-dir", dataDir), ("--bundle", bundle)].filter { $0.1 != nil }.map(\.0)
        if given.count > 1 {
            throw ValidationError("\(given.joined(separator: " and ")) exclude each other: talk to a daemon, read a data directory, or read a bundle")
        }
    }

    /// The socket to use: the flag, then `$REEL_SOCKET`, then the default.
    var socketPath: String {
        socket ?? ToolContext.current.environment["REEL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } ?? SourceOptions.defaultSocketPath
    }

    /// Opens the store: the data directory offline, or a connection to the daemon.
    func open() async throws(ToolError) -> any StoreSource {
        let source: any StoreSource
        if let dataDir {
            source = try ToolContext.current.openOffline(dataDir)
        } else if let bundle {
            source = try BundleSource.open(bundle)
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
        help: ArgumentHelp("When to color: auto colors on a terminal unless NO_COLOR is set.", valueName: "when")
    )
    var color: ColorChoice = .auto

    var printer: Printer { Printer(context: ToolContext.current, json: json, color: color) }
}

extension ColorChoice: ExpressibleByArgument {}

/// A value the command line gives that its option or argument does not take. argument-parser
/// shows `description` after "The value 'X' is invalid for '--at <seq>': ".
struct ArgumentValueError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Reads the numbers of the command line: seqs, counts, ports.
///
/// Every numeric option is declared with `parsing: .unconditional` and one of these as its
/// `transform`: by default argument-parser reads `--at -1` as `--at` without its value (`-1`
/// looks like a flag), and says "Missing value"; this way `-1` reaches the parser, which says
/// what the option takes. A negative positional argument (`reel show -1`) is caught where the
/// command line's errors are reported (`ReelTool.negativeNumberMessage`).
enum NumberArgument {
    /// A whole number of at least `minimum` and at most `maximum`; `what` names it in the message
    /// ("a seq", "a count").
    static func whole(_ text: String, _ what: String, minimum: UInt64, maximum: UInt64 = .max) throws -> UInt64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let range = maximum == .max ? "\(minimum) or more" : "\(minimum) to \(maximum)"
        if trimmed.hasPrefix("-"), trimmed.dropFirst().allSatisfy(\.isNumber), trimmed.count > 1 {
            throw ArgumentValueError("\(what) is \(range)")
        }
        guard !trimmed.isEmpty, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw ArgumentValueError("\(what) is a whole number, \(range)")
        }
        guard let value = UInt64(trimmed) else { throw ArgumentValueError("\(what) is \(range): \(trimmed) is too large") }
        guard value >= minimum, value <= maximum else { throw ArgumentValueError("\(what) is \(range)") }
        return value
    }

    /// A count of things: 1 or more.
    @Sendable static func count(_ text: String) throws -> Int {
        Int(clamping: try whole(text, "a count", minimum: 1))
    }

    /// The version of a payload's shape: 1 or more.
    @Sendable static func version(_ text: String) throws -> Int {
        Int(clamping: try whole(text, "a version", minimum: 1))
    }
}

/// Reads a seq from the command line: a whole number, 0 or more.
struct SeqArgument: Sendable {
    var value: UInt64

    init(_ value: UInt64) {
        self.value = value
    }

    /// The `transform` of every seq option and argument.
    @Sendable static func parse(_ text: String) throws -> SeqArgument {
        SeqArgument(try NumberArgument.whole(text, "a seq", minimum: 0))
    }
}

/// Reads a JSON Pointer from the command line: `""` (the whole state) or `/` then keys.
struct PointerArgument: Sendable {
    var pointer: JSONPointer

    /// The `transform` of every path argument. A path without its leading `/` is the usual
    /// slip (`character/hp`): the message says what a path is and suggests the fix, as
    /// `reel bisect` does for its conditions.
    @Sendable static func parse(_ text: String) throws -> PointerArgument {
        do {
            return PointerArgument(pointer: try JSONPointer(text))
        } catch {
            guard text.hasPrefix("/") else {
                throw ArgumentValueError(
                    "a path is a JSON Pointer: '/' then keys, such as /character/hp ('' for the whole state); did you mean '/\(text)'?")
            }
            throw ArgumentValueError("\(error.message) (in a key, ~0 is '~' and ~1 is '/')")
        }
    }
}
