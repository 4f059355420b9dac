import Foundation

/// Why `reeld` cannot start: the one error type of `ReelDaemon`.
///
/// ``description`` is a single line a person can act on; the executable prints it (prefixed with
/// `reeld: `) on stderr and exits with ``exitStatus``. The statuses follow BSD's `sysexits.h`, so
/// a service manager can tell "fix the configuration" from "try again later":
///
/// | code | exit status |
/// | --- | --- |
/// | ``Code/helpRequested`` | 0 (print ``DaemonConfiguration/helpText`` on stdout) |
/// | ``Code/usage`` | 64 `EX_USAGE` |
/// | ``Code/incompatibleData`` | 65 `EX_DATAERR` |
/// | ``Code/storage`` | 74 `EX_IOERR` |
/// | ``Code/io`` | 74 `EX_IOERR` |
/// | ``Code/alreadyRunning``, ``Code/socketInUse`` | 75 `EX_TEMPFAIL` |
/// | ``Code/unsafePermissions`` | 77 `EX_NOPERM` |
/// | ``Code/invalidSetting``, ``Code/configFile`` | 78 `EX_CONFIG` |
public struct StartupError: Error, Sendable, CustomStringConvertible {
    /// Opaque, extensible kind of failure: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, for logs.
        public let name: String
        /// The process exit status for this kind of failure.
        public let exitStatus: Int32
        private init(_ name: String, _ exitStatus: Int32) {
            self.name = name
            self.exitStatus = exitStatus
        }
        public var description: String { name }

        /// `--help`, `--version` or `--generate-completion-script` was given: not a failure. Print
        /// ``StartupError/requestedOutput`` on standard output and exit 0.
        public static let helpRequested = Code("helpRequested", 0)
        /// The command line is malformed: an unknown flag, a flag without its value.
        public static let usage = Code("usage", 64)
        /// A setting has a value that cannot be used; the message names the setting and where the
        /// value came from (flag, environment variable, config file).
        public static let invalidSetting = Code("invalidSetting", 78)
        /// The config file is missing, unreadable, malformed, or has unknown keys.
        public static let configFile = Code("configFile", 78)
        /// Another `reeld` holds the data directory's lock.
        public static let alreadyRunning = Code("alreadyRunning", 75)
        /// A live daemon answers on the socket path.
        public static let socketInUse = Code("socketInUse", 75)
        /// A directory or file is not safe to use: world-writable, owned by someone else, or not
        /// reachable by the configured group.
        public static let unsafePermissions = Code("unsafePermissions", 77)
        /// A file-system call failed (see ``StartupError/underlying``).
        public static let io = Code("io", 74)
        /// The store could not be opened: the data directory is unreadable or damaged.
        public static let storage = Code("storage", 74)
        /// The data directory was written by an incompatible format or for another reducer.
        public static let incompatibleData = Code("incompatibleData", 65)
        /// The data directory is not a directory, or holds other files and no store: reeld
        /// creates a store only in a new or empty directory.
        public static let notADataDirectory = Code("notADataDirectory", 78)
    }

    /// The kind of failure.
    public var code: Code
    /// One line a person can act on.
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error & Sendable)?
    /// For ``Code/helpRequested``: what was asked for (the help, the version line, a completion
    /// script), to print as it is.
    public var requestedOutput: String?

    /// - Parameters:
    ///   - code: the kind of failure.
    ///   - message: what went wrong and what to do; line breaks are folded into spaces so that the
    ///     message stays one line.
    ///   - underlying: the cause.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message.singleLine
        self.underlying = underlying
    }

    /// The process exit status: 0 only for ``Code/helpRequested``.
    public var exitStatus: Int32 { code.exitStatus }

    public var description: String { message }
}

extension String {
    /// The text with every run of whitespace that contains a line break folded into one space.
    var singleLine: String {
        guard contains(where: \.isNewline) else { return self }
        return split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }
}
