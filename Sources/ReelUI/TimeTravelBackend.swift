import Hummingbird
import ReelCore
import ReelJSON
import ReelProtocol

/// What the time-travel page reads and writes: a store, live (a daemon over its socket) or
/// offline (a data directory opened read-only), reached with calls of the protocol. `reel`
/// provides it over the same sources its commands use, so the page shows exactly what
/// `reel get --at`, `reel show`, `reel replay --skip` and `reel bisect` say.
public protocol TimeTravelBackend: Sendable {
    /// What the source is, for the page's header: "the daemon at …", "the data directory … (read-only)".
    var label: String { get }
    /// Whether this is a live daemon.
    var isLive: Bool { get }
    /// The most actions one `history` call asks for (a live page is one line of the socket).
    var historyPageSize: Int { get }
    /// Whether this peer may dispatch (live, and the daemon's policy allows it).
    func mayDispatch() async -> Bool
    /// Calls a method of the protocol.
    func call<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) async throws(UIError) -> M.Result
    /// The latest seq now and after every change, until the task is cancelled.
    func seqs() async -> AsyncStream<UInt64>
}

// What the page asks, each one call of the protocol.
extension TimeTravelBackend {
    /// The reducer's `name@version`.
    func reducer() async throws(UIError) -> String {
        try await call(Method.Hello.self, HelloParams(client: "reel ui", protocolVersion: WireProtocol.version)).reducer.description
    }

    func latestSeq() async throws(UIError) -> UInt64 {
        try await call(Method.Hello.self, HelloParams(client: "reel ui", protocolVersion: WireProtocol.version)).seq
    }

    /// The seq the history starts after, when it is a bundle's (`stats`' `origin`); `nil` or 0
    /// from the first action.
    func origin() async throws(UIError) -> UInt64? {
        try await call(Method.Stats.self, StatsParams()).origin
    }

    /// Logged actions from `from` through `to` (the latest when `nil`), at most `limit`, only of
    /// `types` when given.
    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?, branch: String? = nil) async throws(UIError) -> [ActionEnvelope] {
        try await call(Method.History.self, HistoryParams(from: from, to: to, limit: min(limit, historyPageSize), types: types, branch: branch)).actions
    }

    /// The value at `path` at `seq` (now when `nil`), with its seq; of a branch when one is named.
    func state(at seq: UInt64?, path: JSONPointer, branch: String? = nil) async throws(UIError) -> (seq: UInt64, value: JSONValue) {
        let snapshot = try await call(Method.Get.self, GetParams(path: path, at: seq, branch: branch))
        return (snapshot.seq, snapshot.value)
    }

    /// The latest seq of the main history, or of a branch.
    /// (A branch's from the list of branches: no state is rebuilt for each page of its log.)
    func latestSeq(branch: String?) async throws(UIError) -> UInt64 {
        guard let branch else { return try await latestSeq() }
        guard let found = try await call(Method.Branches.self, BranchesParams()).branches.first(where: { $0.name == branch }) else {
            throw UIError(refusal: RPCError(code: RPCError.Code.invalidParams, message: "no branch named '\(branch)'"))
        }
        return found.seq
    }

    /// From the state at `from` to that at `to`, both of `branch` (the main history's when `nil`),
    /// or the state at `to` of `toBranch`, or of the main history with `toMain`.
    func diff(
        from: UInt64, to: UInt64, path: JSONPointer, branch: String? = nil, toBranch: String? = nil, toMain: Bool = false
    ) async throws(UIError) -> JSONPatch {
        try await call(Method.Diff.self, DiffParams(from: from, to: to, path: path, branch: branch, toBranch: toBranch, toMain: toMain)).patch
    }

    /// The state at `seq` (the latest when `nil`) had the actions in `skip` never been dispatched.
    func replay(at seq: UInt64?, skip: Set<UInt64>) async throws(UIError) -> (value: JSONValue, refused: [SeqReason]) {
        let result = try await call(Method.Replay.self, ReplayParams(to: seq, skip: skip, path: .root))
        return (result.value, result.refused)
    }

    func bisect(_ condition: JSONCondition, through: UInt64?) async throws(UIError) -> BisectOutcome {
        try await call(Method.Bisect.self, BisectParams(condition: condition, through: through))
    }

    /// Dispatches one action; returns its seq.
    func dispatch(_ action: Action) async throws(UIError) -> UInt64 {
        try await call(Method.Dispatch.self, DispatchParams(action: action)).seqs.lowerBound
    }
}

/// An error the page shows: the HTTP status, Reel's protocol code when there is one, the message;
/// Hummingbird answers it as `{"error": {code, message}}` with its status.
public struct UIError: HTTPResponseError, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: Int
    public var message: String

    public init(status: HTTPResponse.Status, code: Int? = nil, message: String) {
        self.status = status
        self.code = code ?? status.code
        self.message = message
    }

    /// A refusal of the store: 404 for what is not there, 403 for what this user may not do, 400
    /// for a request the store will not carry out, 503 when it is shutting down, 500 otherwise.
    public init(refusal error: RPCError) {
        let status: HTTPResponse.Status = switch error.code {
        case RPCError.Code.pathNotFound, RPCError.Code.seqOutOfRange: .notFound
        case RPCError.Code.permissionDenied: .forbidden
        case RPCError.Code.rejected, RPCError.Code.unknownActionType, RPCError.Code.seqMismatch, RPCError.Code.tooLarge,
            RPCError.Code.invalidParams:
            .badRequest
        case RPCError.Code.overloaded, RPCError.Code.shuttingDown: .serviceUnavailable
        default: .internalServerError
        }
        self.init(status: status, code: error.code, message: "error \(error.code): \(error.message)")
    }

    /// The store cannot be reached (503).
    public static func unavailable(_ message: String) -> UIError { UIError(status: .serviceUnavailable, message: message) }
    /// Anything else that went wrong (500).
    public static func failed(_ message: String) -> UIError { UIError(status: .internalServerError, message: message) }

    static func badRequest(_ message: String) -> UIError { UIError(status: .badRequest, message: message) }
    static func forbidden(_ message: String) -> UIError { UIError(status: .forbidden, code: RPCError.Code.permissionDenied, message: message) }

    var jsonValue: JSONValue {
        ["error": ["code": .int(Int64(code)), "message": .string(message)]]
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONBody(jsonValue, status: status).response
    }
}

/// A JSON response: the value's canonical text, never cached.
struct JSONBody: ResponseGenerator {
    let value: JSONValue
    var status: HTTPResponse.Status = .ok

    init(_ value: JSONValue, status: HTTPResponse.Status = .ok) {
        self.value = value
        self.status = status
    }

    var response: Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized()))
        )
    }

    func response(from request: Request, context: some RequestContext) throws -> Response { response }
}
