import ReelProtocol
import ReelQuery
import ReelStorage
import ReelStore

/// A failure of a `reel` command: one sentence for the person at the terminal, and the exit status
/// for scripts.
///
/// Exit statuses (documented in `reel --help`):
/// - 0: done; for `bisect` and `verify`, the answer is yes / everything matches;
/// - 1: a negative answer: the condition of `bisect` never holds, `verify` found a difference;
/// - 2: the daemon or the store refused the request (the message says why);
/// - 64: the command line is wrong; 65: input data is not valid (bad JSON, bad NDJSON line);
/// - 69: the daemon or the data directory cannot be reached.
public struct ToolError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var exitStatus: Int32
    /// The protocol's error, when the store refused: the daemon's answer as it came (code,
    /// message, data), or offline the one the daemon would have sent. The page and scripts read
    /// the code here, not from the message.
    public var refusal: RPCError?

    public init(_ message: String, exitStatus: Int32 = ExitStatus.refused) {
        self.message = message
        self.exitStatus = exitStatus
    }

    public var description: String { message }

    /// A store error met offline, worded like the daemon would word it.
    init(_ error: StoreError) {
        // Only a directory that cannot be opened or read is "unreachable"; damaged contents are
        // an answer about the data (2), as the daemon's 1010 would be.
        let unreachable = (error.underlying as? StorageError).map(Self.isUnreachable) ?? false
        guard !unreachable else {
            self.init(error.message, exitStatus: ExitStatus.unavailable)
            return
        }
        self.init(RPCError(error))
    }

    /// A data directory that could not be opened.
    init(_ error: StorageError) {
        self.init(error.message, exitStatus: Self.isUnreachable(error) ? ExitStatus.unavailable : ExitStatus.refused)
    }

    private static func isUnreachable(_ error: StorageError) -> Bool {
        error.code == .notFound || error.code == .io
    }

    /// An error answered by the daemon (or offline, as the daemon would), in plain words: the
    /// protocol's code stays in ``refusal`` for programs, and decides the exit status.
    init(_ error: RPCError) {
        var message = error.message
        if error.code == RPCError.Code.tooLarge, error.data?["bytes"] != nil {
            message += " (the daemon's --max-line-bytes sets the limit; a large batch can be sent in parts)"
        }
        self.init(message, exitStatus: Self.exitStatus(for: error))
        refusal = error
    }

    /// The exit status for a refusal: the one place wire codes become exit statuses.
    static func exitStatus(for error: RPCError) -> Int32 {
        switch error.code {
        case RPCError.Code.tooLarge, RPCError.Code.parseError, RPCError.Code.invalidRequest:
            ExitStatus.dataError  // the input cannot be taken as it is
        case RPCError.Code.shuttingDown:
            ExitStatus.unavailable
        default:
            ExitStatus.refused
        }
    }
}

/// The exit statuses of `reel`.
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let negative: Int32 = 1
    public static let refused: Int32 = 2
    public static let usage: Int32 = 64
    public static let dataError: Int32 = 65
    public static let unavailable: Int32 = 69
}
