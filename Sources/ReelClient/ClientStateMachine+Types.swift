import ReelJSON
import ReelProtocol

// The values the client state machine deals in.

extension ClientStateMachine {
    enum Phase: Equatable {
        /// No connection; requests wait for the next one.
        case disconnected
        /// Connected, `hello` in flight: only the handshake goes out.
        case handshaking(generation: UInt64)
        /// Connected and greeted: requests are written as they come.
        case ready(generation: UInt64)
        /// Closed for good, by the owner or because reconnecting gave up.
        case closed
    }

    enum RequestKind: Equatable {
        /// An app's request, answered to its caller.
        case call
        /// An app's `subscribe` for a local subscription; its answer registers the server's id.
        case subscribe(Int)
        /// The `hello` that opens a connection.
        case handshake(generation: UInt64)
        /// Resuming a subscription after a reconnection (no caller waits).
        case resubscribe(Int)
        /// Ending a subscription on the daemon (no caller waits).
        case unsubscribe
    }

    struct Request {
        var method: String
        var line: [UInt8]
        var kind: RequestKind
        var policy: ResendPolicy
        /// The connection it was written to; `nil` while it waits for one.
        var sentOn: UInt64?
        /// Its caller's task was cancelled after it was written (it still gets its answer).
        var cancelled = false
    }

    struct Subscription {
        var path: JSONPointer
        var mode: SubscriptionMode
        /// The branch it follows (`nil`: the main history); a resumption follows it again.
        var branch: String? = nil
        /// Whether it takes its shared feed's updates (`subscribe` with `shared`); a resumption does too.
        var shared = false
        /// The feed its updates name on the current connection, when shared.
        var feed: String?
        /// The seq of the last update delivered (or of the `subscribe` result); `nil` until the
        /// first `subscribe` is answered. Resumption starts from it.
        var lastSeq: UInt64?
        /// The daemon's id for it on the current connection; `nil` while disconnected or resuming.
        var serverID: String?
    }

    /// What the owner of the state machine must do, in order.
    enum Output {
        /// Resume the caller waiting for request `id`.
        case answer(id: Int64, Result<JSONValue, ReelClientError>)
        /// Hand an update to a subscription's sequence.
        case deliver(subscription: Int, SubscriptionUpdate)
        /// End a subscription's sequence: normally with `nil`, or with an error.
        case finish(subscription: Int, ReelClientError?)
        /// Write these lines, in order, to connection `generation`.
        case write(generation: UInt64, lines: [[UInt8]])
    }
}
