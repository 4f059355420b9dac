import DequeModule
import ReelJSON
import ReelProtocol
import Synchronization

/// What one connection has to send, in the order it must be sent.
///
/// Requests of a connection run concurrently (a `dispatch` waits for its commit while a `get`
/// needs nothing), but their responses go out in request order: each request takes a slot when it
/// is read, fills it when done, and the writer sends the leading filled slots. Subscription
/// updates are not queued at all: the writer computes them from the latest state when it has
/// room to send, which is what keeps a slow subscriber's memory bounded and its updates coalesced.
final class Outbox: Sendable {
    struct Slot {
        var bytes: [UInt8]?
        /// A subscription that becomes active once this (its `subscribe` response) is written:
        /// no update may overtake the response that announces the subscription.
        var activates: Subscription?
        /// Close the connection after writing this.
        var closesConnection = false
    }

    private struct State {
        var slots: Deque<Slot> = []
        var firstIndex = 0  // index of slots.first
        var subscriptions: [String: Subscription] = [:]
        var active: [Subscription] = []
        var closed = false
        var aborted = false
        var capacityWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>.Continuation
    let wakeupStream: AsyncStream<Void>
    /// The most requests in flight on one connection; reading more waits (backpressure on the peer).
    let maxInFlight: Int

    init(maxInFlight: Int) {
        self.maxInFlight = maxInFlight
        (wakeupStream, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Takes the next slot, waiting while `maxInFlight` responses are outstanding.
    /// - Returns: `nil` once the writer has given up (the peer is gone).
    func reserve() async -> Int? {
        while true {
            let index: Int?? = state.withLock { state in
                if state.aborted { return .some(nil) }
                guard state.slots.count < maxInFlight else { return nil }
                state.slots.append(Slot())
                return state.firstIndex + state.slots.count - 1
            }
            if let index { return index }
            await withCheckedContinuation { continuation in
                let full = state.withLock { state in
                    let full = state.slots.count >= maxInFlight && !state.aborted
                    if full { state.capacityWaiters.append(continuation) }
                    return full
                }
                if !full { continuation.resume() }
            }
        }
    }

    /// Fills a slot and wakes the writer.
    func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, close: Bool = false) {
        state.withLock { state in
            guard !state.aborted else { return }
            state.slots[index - state.firstIndex] = Slot(bytes: bytes, activates: subscription, closesConnection: close)
        }
        wake()
    }

    /// Registers a subscription (inactive until its response is written).
    /// - Returns: `false` when the connection already has `limit` subscriptions.
    func add(_ subscription: Subscription, limit: Int) -> Bool {
        state.withLock { state in
            guard state.subscriptions.count < limit else { return false }
            state.subscriptions[subscription.id] = subscription
            return true
        }
    }

    /// Forgets a subscription. Returns whether it existed.
    func remove(subscription id: String) -> Bool {
        state.withLock { state in
            guard state.subscriptions.removeValue(forKey: id) != nil else { return false }
            state.active.removeAll { $0.id == id }
            return true
        }
    }

    func wake() {
        wakeups.yield()
    }

    /// No more requests: the writer sends what is left and stops.
    func close() {
        state.withLock { $0.closed = true }
        wake()
    }

    /// The writer stopped (peer gone, or a closing error sent): release a reader waiting for room.
    func abort() {
        let waiters = state.withLock { state in
            state.aborted = true
            defer { state.capacityWaiters = [] }
            return state.capacityWaiters
        }
        for waiter in waiters { waiter.resume() }
        wakeups.finish()
    }

    /// The leading filled slots, in order; frees their places for new requests.
    func takeReady() -> (slots: [Slot], drained: Bool) {
        let (ready, waiters, drained) = state.withLock { state in
            var ready: [Slot] = []
            while let first = state.slots.first, first.bytes != nil {
                ready.append(state.slots.removeFirst())
                state.firstIndex += 1
                if let subscription = first.activates, state.subscriptions[subscription.id] != nil {
                    state.active.append(subscription)
                }
            }
            let waiters = ready.isEmpty ? [] : state.capacityWaiters
            if !ready.isEmpty { state.capacityWaiters = [] }
            return (ready, waiters, state.closed && state.slots.isEmpty)
        }
        for waiter in waiters { waiter.resume() }
        return (ready, drained)
    }

    /// The subscriptions whose `subscribe` response has been written.
    var activeSubscriptions: [Subscription] { state.withLock { $0.active } }
}
