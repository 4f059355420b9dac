import ReelCore
import ReelJSON
import ReelProtocol

// The results of the protocol's methods are ReelProtocol's types (`ServerHello`, `DispatchReceipt`,
// `Snapshot`, `HistoryPage`, `ReplayResult`, `StatsResult`, …), which the server writes and the
// client reads. What is the client's own is here.

/// An action a what-if replay left out because the reducer refused it: its seq and the reducer's
/// reason (the protocol module's type, shared with the maintenance results).
public typealias RefusedAction = SeqReason

/// Whether a request may be sent again when the connection drops before its answer arrives.
public enum ResendPolicy: Sendable {
    /// Send it again on the next connection: it changes nothing (a read), or the daemon recognises
    /// the repeat (a dispatch with an idempotency key).
    case resendAfterReconnect
    /// Fail it with ``ReelClientError/Code/connectionLost``: running it twice could do twice what
    /// was meant once, and whether the first one ran is unknown.
    case failIfConnectionLost
}
