import ReelProtocol

/// A call ``MethodHandler`` answers on its own: every method but `dispatch`, which a connection
/// hands to the store itself (to keep the order it read them in), and `subscribe` and
/// `unsubscribe`, which need the state of their connection.
public enum HandlerCall: Sendable, Equatable {
    case hello(HelloParams)
    case get(GetParams)
    case history(HistoryParams)
    case diff(DiffParams)
    case replay(ReplayParams)
    case stats(StatsParams)
    case checkpoints(CheckpointsParams)
    case verify(VerifyParams)
    case backup(BackupParams)
    case bisect(BisectParams)
    case scan(ScanParams)
    case digest(DigestParams)

    /// The call, or `nil` for a dispatch or a subscription call.
    public init?(_ call: RPCCall) {
        guard case .handler(let handled) = CallRoute(call) else { return nil }
        self = handled
    }

    /// The method called.
    public var method: MethodName {
        switch self {
        case .hello: .hello
        case .get: .get
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
}

/// Who answers a call: the store (a dispatch), its connection (subscriptions live there) or the
/// method handler. One exhaustive switch, so a new method in ``RPCCall`` is a compile error here
/// until it is routed.
enum CallRoute {
    case dispatch(DispatchParams)
    case subscribe(SubscribeParams)
    case unsubscribe(UnsubscribeParams)
    case handler(HandlerCall)

    init(_ call: RPCCall) {
        switch call {
        case .subscribe(let params): self = .subscribe(params)
        case .unsubscribe(let params): self = .unsubscribe(params)
        case .hello(let params): self = .handler(.hello(params))
        case .dispatch(let params): self = .dispatch(params)
        case .get(let params): self = .handler(.get(params))
        case .history(let params): self = .handler(.history(params))
        case .diff(let params): self = .handler(.diff(params))
        case .replay(let params): self = .handler(.replay(params))
        case .stats(let params): self = .handler(.stats(params))
        case .checkpoints(let params): self = .handler(.checkpoints(params))
        case .verify(let params): self = .handler(.verify(params))
        case .backup(let params): self = .handler(.backup(params))
        case .bisect(let params): self = .handler(.bisect(params))
        case .scan(let params): self = .handler(.scan(params))
        case .digest(let params): self = .handler(.digest(params))
        }
    }
}
