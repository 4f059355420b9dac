import ReelCore
import ReelProtocol

/// Decides whether a connected peer (by its socket credentials) may do something: what a method
/// needs is ``MethodName/permission`` (ReelProtocol).
public typealias Authorizer = @Sendable (Permission, Peer) -> Bool
