import ReelJSON

/// A request's method and its checked, typed params: what a server switches on to call the store.
///
/// ```swift
/// switch try RPCCall(request) {
/// case .get(let params): …
/// case .dispatch(let params): …
/// …
/// }
/// ```
public enum RPCCall: Sendable, Equatable {
    /// `hello`: versions, capabilities, current seq.
    case hello(HelloParams)
    /// `dispatch`: one action or an atomic batch.
    case dispatch(DispatchParams)
    /// `get`: the state or a slice, now or at a seq.
    case get(GetParams)
    /// `subscribe`: follow changes at a path.
    case subscribe(SubscribeParams)
    /// `unsubscribe`: stop following.
    case unsubscribe(UnsubscribeParams)
    /// `history`: logged actions in a range.
    case history(HistoryParams)
    /// `diff`: a patch between the states at two seqs.
    case diff(DiffParams)
    /// `replay`: the state without some actions.
    case replay(ReplayParams)
    /// `stats`: the daemon's figures.
    case stats(StatsParams)
    /// `checkpoints`: the checkpoints kept beside the log (an addition to SPEC).
    case checkpoints(CheckpointsParams)
    /// `verify`: replay a range and compare it with the checkpoints in it (an addition).
    case verify(VerifyParams)
    /// `backup`: a consistent, compact, owner-only copy of the data directory (an addition).
    case backup(BackupParams)
    /// `bisect`: the first seq at which a condition on the state holds (an addition).
    case bisect(BisectParams)
    /// `scan`: check every stored record's checksum and report the damaged ones (an addition).
    case scan(ScanParams)
    /// `digest`: the SHA-256 of the state at a seq (an addition).
    case digest(DigestParams)

    /// Reads the method and params of a parsed request.
    ///
    /// - Parameter request: A request whose envelope `RPCRequest.parse` accepted.
    /// - Throws: -32601 for an unknown method (the message lists the known ones); -32602, or 1007
    ///   for an oversized batch, for params that do not fit the method.
    public init(_ request: RPCRequest) throws(RPCError) {
        try self.init(method: request.method, params: request.params)
    }

    /// Reads a method name and its params.
    ///
    /// - Parameters:
    ///   - method: The method name as sent.
    ///   - params: The params, `nil` when absent.
    /// - Throws: As ``init(_:)``.
    public init(method: String, params: JSONValue?) throws(RPCError) {
        guard let name = MethodName(rawValue: method) else { throw .methodNotFound(method) }
        switch name {
        case .hello: self = .hello(try HelloParams(params: params))
        case .dispatch: self = .dispatch(try DispatchParams(params: params))
        case .get: self = .get(try GetParams(params: params))
        case .subscribe: self = .subscribe(try SubscribeParams(params: params))
        case .unsubscribe: self = .unsubscribe(try UnsubscribeParams(params: params))
        case .history: self = .history(try HistoryParams(params: params))
        case .diff: self = .diff(try DiffParams(params: params))
        case .replay: self = .replay(try ReplayParams(params: params))
        case .stats: self = .stats(try StatsParams(params: params))
        case .checkpoints: self = .checkpoints(try CheckpointsParams(params: params))
        case .verify: self = .verify(try VerifyParams(params: params))
        case .backup: self = .backup(try BackupParams(params: params))
        case .bisect: self = .bisect(try BisectParams(params: params))
        case .scan: self = .scan(try ScanParams(params: params))
        case .digest: self = .digest(try DigestParams(params: params))
        }
    }

    /// The method called.
    public var method: MethodName {
        switch self {
        case .hello: .hello
        case .dispatch: .dispatch
        case .get: .get
        case .subscribe: .subscribe
        case .unsubscribe: .unsubscribe
        case .history: .history
        case .diff: .diff
        case .replay: .replay
        case .stats: .stats
        case .checkpoints: .checkpoints
        case .verify: .verify
        case .backup: .backup
        case .bisect: .bisect
        case .scan: .scan
        case .digest: .digest
        }
    }

    /// The params as a client sends them.
    public var params: JSONValue {
        switch self {
        case .hello(let params): params.jsonValue
        case .dispatch(let params): params.jsonValue
        case .get(let params): params.jsonValue
        case .subscribe(let params): params.jsonValue
        case .unsubscribe(let params): params.jsonValue
        case .history(let params): params.jsonValue
        case .diff(let params): params.jsonValue
        case .replay(let params): params.jsonValue
        case .stats(let params): params.jsonValue
        case .checkpoints(let params): params.jsonValue
        case .verify(let params): params.jsonValue
        case .backup(let params): params.jsonValue
        case .bisect(let params): params.jsonValue
        case .scan(let params): params.jsonValue
        case .digest(let params): params.jsonValue
        }
    }

    /// The request a client sends for this call.
    ///
    /// - Parameter id: The request id.
    /// - Returns: A request whose params read back, through ``init(_:)``, to this call.
    public func request(id: RPCID) -> RPCRequest {
        RPCRequest(id: id, method: method.rawValue, params: params)
    }
}
