import ReelCore
import ReelProtocol

/// What a request needs the peer to be allowed to do.
public enum Permission: String, Sendable, CaseIterable {
    /// `hello`, `get`, `subscribe`, `unsubscribe`, `history`, `diff`, `replay`, `checkpoints`, `bisect`.
    case read
    /// `dispatch`.
    case dispatch
    /// `stats`, `verify`, `backup`: operator methods.
    case admin

    /// The permission a method needs.
    public init(for method: MethodName) {
        switch method {
        case .dispatch: self = .dispatch
        case .stats, .verify, .backup, .scan: self = .admin
        case .hello, .get, .subscribe, .unsubscribe, .history, .diff, .replay, .checkpoints, .bisect: self = .read
        }
    }
}

/// Decides whether a connected peer (by its socket credentials) may do something.
public typealias Authorizer = @Sendable (Permission, Peer) -> Bool
