import ReelJSON
import ReelProtocol
import Synchronization

/// One subscription of a connection: what it watches and what it last delivered.
///
/// Only the connection's writer reads and advances `delivered`; the mutex makes that safe to
/// share with the reader, which creates and removes subscriptions.
final class Subscription: Sendable {
    struct Delivered {
        /// The seq of the last update (or of the `subscribe` result).
        var seq: UInt64
        /// The value at `path` as of `seq` (value and patch modes; `.null` when absent).
        var value: JSONValue
    }

    let id: String
    let path: JSONPointer
    let mode: SubscriptionMode
    private let state: Mutex<Delivered>

    init(id: String, path: JSONPointer, mode: SubscriptionMode, seq: UInt64, value: JSONValue) {
        self.id = id
        self.path = path
        self.mode = mode
        self.state = Mutex(Delivered(seq: seq, value: value))
    }

    var delivered: Delivered {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
