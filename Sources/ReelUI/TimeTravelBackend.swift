import ReelCore
import ReelJSON
import ReelProtocol

/// What the time-travel page reads and writes: a store, live (a daemon over its socket) or
/// offline (a data directory opened read-only). `reel` provides it over the same sources its
/// commands use, so the page shows exactly what `reel get --at`, `reel show`, `reel replay
/// --skip` and `reel bisect` say.
public protocol TimeTravelBackend: Sendable {
    /// What the source is, for the page's header: "the daemon at …", "the data directory … (read-only)".
    var label: String { get }
    /// Whether this is a live daemon.
    var isLive: Bool { get }
    /// The reducer's `name@version`.
    func reducer() async throws(UIError) -> String
    /// Whether this peer may dispatch (live, and the daemon's policy allows it).
    func mayDispatch() async -> Bool
    func latestSeq() async throws(UIError) -> UInt64
    /// Logged actions from `from` through `to` (the latest when `nil`), at most `limit`, only of
    /// `types` when given.
    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) async throws(UIError) -> [ActionEnvelope]
    /// The value at `path` at `seq` (now when `nil`), with its seq.
    func state(at seq: UInt64?, path: JSONPointer) async throws(UIError) -> (seq: UInt64, value: JSONValue)
    func diff(from: UInt64, to: UInt64, path: JSONPointer) async throws(UIError) -> JSONPatch
    /// The state at `seq` (the latest when `nil`) had the actions in `skip` never been dispatched.
    func replay(at seq: UInt64?, skip: Set<UInt64>) async throws(UIError) -> (value: JSONValue, refused: [SeqReason])
    func bisect(_ condition: JSONCondition, through: UInt64?) async throws(UIError) -> (seq: UInt64?, latest: UInt64, probes: Int)
    /// Dispatches one action; returns its seq.
    func dispatch(_ action: Action) async throws(UIError) -> UInt64
    /// The latest seq now and after every change, until the task is cancelled.
    func seqs() async -> AsyncStream<UInt64>
}

/// An error the page shows: the HTTP status, Reel's protocol code when there is one, the message.
public struct UIError: Error, Sendable, Equatable {
    public var status: Int
    public var code: Int
    public var message: String

    public init(status: Int, code: Int? = nil, message: String) {
        self.status = status
        self.code = code ?? status
        self.message = message
    }

    static func badRequest(_ message: String) -> UIError { UIError(status: 400, message: message) }
    static func forbidden(_ message: String) -> UIError { UIError(status: 403, code: RPCError.Code.permissionDenied, message: message) }

    var jsonValue: JSONValue {
        ["error": ["code": .int(Int64(code)), "message": .string(message)]]
    }
}
