import ReelProtocol
import ReelStore

extension RPCError {
    /// The protocol's error for an engine error: the one place engine errors get wire codes,
    /// used by the daemon and by `reel --data-dir` (which words its errors as the daemon would).
    ///
    /// - Parameters:
    ///   - error: The engine's error.
    ///   - expectedSeq: The `expectedSeq` of the dispatch refused, if any: a stale one also carries
    ///     the current seq (`data: {seq}`).
    public init(_ error: StoreError, expectedSeq: UInt64? = nil) {
        if error.code == .seqMismatch, let expectedSeq, let current = error.currentSeq {
            self = .seqMismatch(expected: expectedSeq, current: current)
            return
        }
        let code = switch error.code {
        case .rejected: Code.rejected
        case .unknownActionType: Code.unknownActionType
        case .seqMismatch: Code.seqMismatch
        case .permissionDenied: Code.permissionDenied
        case .pathNotFound: Code.pathNotFound
        case .seqOutOfRange: Code.seqOutOfRange
        case .shuttingDown: Code.shuttingDown
        case .storage: Code.storageFailure
        case .invalidArgument: Code.invalidParams
        default: Code.internalError
        }
        self.init(code: code, message: error.message)
    }
}
