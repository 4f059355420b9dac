import ReelCore
import ReelProtocol

/// Decides whether a connected peer (by its socket credentials) may do something: what a method
/// needs is ``ProtocolMethod/permission`` (ReelProtocol). Its answers must not change while the
/// server runs: a connection asks once per permission, when it is accepted.
public typealias Authorizer = @Sendable (Permission, Peer) -> Bool
