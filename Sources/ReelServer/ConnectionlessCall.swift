import ReelProtocol

/// A call ``MethodHandler`` answers: every method but `subscribe` and `unsubscribe`, which need
/// the state of their connection. Routing a call is one exhaustive switch (``init(_:)``), so a
/// new method in ``RPCCall`` is a compile error here until it is routed.
public enum ConnectionlessCall: Sendable, Equatable {
    case hello(HelloParams)
    case dispatch(DispatchParams)
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

    /// The call, or `nil` for a call its connection answers.
    public init?(_ call: RPCCall) {
        switch call {
        case .subscribe, .unsubscribe: return nil
        case .hello(let params): self = .hello(params)
        case .dispatch(let params): self = .dispatch(params)
        case .get(let params): self = .get(params)
        case .history(let params): self = .history(params)
        case .diff(let params): self = .diff(params)
        case .replay(let params): self = .replay(params)
        case .stats(let params): self = .stats(params)
        case .checkpoints(let params): self = .checkpoints(params)
        case .verify(let params): self = .verify(params)
        case .backup(let params): self = .backup(params)
        case .bisect(let params): self = .bisect(params)
        case .scan(let params): self = .scan(params)
        }
    }

    /// The method called.
    public var method: MethodName {
        switch self {
        case .hello: .hello
        case .dispatch: .dispatch
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
        }
    }
}
