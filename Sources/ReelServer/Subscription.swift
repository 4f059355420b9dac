import ReelJSON
import ReelProtocol
import Synchronization

/// One subscription of a connection: what it watches and what it last delivered.
///
/// Updates are written on the connection's event loop, which alone advances `delivered`; the
/// mutex makes that safe to share with the connection's task, which creates and removes
/// subscriptions.
final class Subscription: Sendable {
    struct Delivered {
        /// The seq of the last update (or of the `subscribe` result).
        var seq: UInt64
        /// The value at `path` as of `seq` (value and patch modes; `.null` when absent).
        var value: JSONValue
        /// Whether `seq` is one the update feed published (not the `subscribe` result's): then
        /// what changed since is known from the feed without comparing values.
        var fromFeed = false
    }

    let id: String
    let path: JSONPointer
    let mode: SubscriptionMode
    /// The shared feed whose lines it receives (``SubscribeParams/shared``); `nil`: lines of its own.
    let feed: String?
    private let state: Mutex<Delivered>
    /// An actions-mode subscription reading from the log: at most one such read at a time.
    private let catchingUp = Atomic(false)

    init(id: String, path: JSONPointer, mode: SubscriptionMode, seq: UInt64, value: JSONValue, feed: String? = nil) {
        self.id = id
        self.path = path
        self.mode = mode
        self.feed = feed
        self.state = Mutex(Delivered(seq: seq, value: value))
    }

    var delivered: Delivered {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    /// The seq of the last update and whether the feed published it, without the value.
    var deliveredSeq: (seq: UInt64, fromFeed: Bool) {
        state.withLock { ($0.seq, $0.fromFeed) }
    }

    /// Moves the last update's seq forward, the value it holds unchanged.
    func advanceDelivered(to seq: UInt64) {
        state.withLock { $0.seq = seq }
    }

    /// Claims the log read; `false` when one is under way.
    func startCatchingUp() -> Bool {
        catchingUp.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    func finishCatchingUp() {
        catchingUp.store(false, ordering: .releasing)
    }
}
