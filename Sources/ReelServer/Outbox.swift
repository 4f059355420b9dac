import ReelJSON
import ReelProtocol
import Synchronization

/// A connection's ``ConnectionStateMachine``, shared by its reader (which reserves and fills
/// slots) and its writer (which takes what is ready), with the waiting the machine leaves out: a
/// reader waits for room, the writer for something to write.
final class Outbox: Sendable {
    typealias Slot = ConnectionStateMachine.Slot

    private struct Locked {
        var machine: ConnectionStateMachine
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var hadASubscription = false
        var subscriptionWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<Locked>
    private let wakeups: AsyncStream<Void>.Continuation
    /// Yields when the writer may have something to do (coalesced: one pending wake-up at most).
    let wakeupStream: AsyncStream<Void>

    init(maxInFlight: Int) {
        state = Mutex(Locked(machine: ConnectionStateMachine(maxInFlight: maxInFlight)))
        (wakeupStream, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Takes the next slot, waiting while `maxInFlight` answers are outstanding.
    /// - Returns: `nil` once the writer has given up (the peer is gone).
    func reserve() async -> Int? {
        while true {
            let reservation = state.withLock { $0.machine.reserve() }
            switch reservation {
            case .slot(let index): return index
            case .stopped: return nil
            case .full:
                await withCheckedContinuation { continuation in
                    let waiting = state.withLock { state in
                        // Room may have come, or the writer stopped, since the reservation.
                        guard state.machine.isFull else { return false }
                        state.roomWaiters.append(continuation)
                        return true
                    }
                    if !waiting { continuation.resume() }
                }
            }
        }
    }

    /// Fills a slot and wakes the writer.
    func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, close: Bool = false) {
        if state.withLock({ $0.machine.fill(index, with: bytes, activating: subscription, closing: close) }) { wake() }
    }

    /// Registers a subscription (inactive until its answer is written).
    /// - Returns: `false` when the connection already has `limit` subscriptions.
    func add(_ subscription: Subscription, limit: Int) -> Bool {
        let (added, waiters) = state.withLock { state in
            guard state.machine.add(subscription, limit: limit) else { return (false, [CheckedContinuation<Void, Never>]()) }
            state.hadASubscription = true
            defer { state.subscriptionWaiters = [] }
            return (true, state.subscriptionWaiters)
        }
        for waiter in waiters { waiter.resume() }
        return added
    }

    /// Returns once the connection has had a subscription, or has ended (or the task is
    /// cancelled): until then, commits are none of the connection's business, and watching them
    /// would wake it for nothing after every commit.
    func untilFirstSubscription() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { state in
                    guard !state.hadASubscription, !state.machine.writerStopped, !Task.isCancelled else { return false }
                    state.subscriptionWaiters.append(continuation)
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            releaseSubscriptionWaiters()
        }
    }

    private func releaseSubscriptionWaiters() {
        let waiters = state.withLock { state in
            defer { state.subscriptionWaiters = [] }
            return state.subscriptionWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Forgets a subscription. Returns whether it existed.
    func remove(subscription id: String) -> Bool {
        state.withLock { $0.machine.remove(subscription: id) }
    }

    func wake() {
        wakeups.yield()
    }

    /// No more requests: the writer sends what is left and stops.
    func close() {
        state.withLock { $0.machine.endInput() }
        wake()
    }

    /// The writer stopped (peer gone, or a closing error sent): release a reader waiting for room.
    func abort() {
        let waiters = state.withLock { state in
            state.machine.stopWriting()
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in waiters { waiter.resume() }
        releaseSubscriptionWaiters()
        wakeups.finish()
    }

    /// The leading filled slots, in order; frees their places for new requests.
    func takeReady() -> (slots: [Slot], drained: Bool) {
        let (ready, waiters) = state.withLock { state in
            let ready = state.machine.takeReady()
            guard ready.freedRoom else { return (ready, [CheckedContinuation<Void, Never>]()) }
            defer { state.roomWaiters = [] }
            return (ready, state.roomWaiters)
        }
        for waiter in waiters { waiter.resume() }
        return (ready.slots, ready.drained)
    }

    /// The subscriptions whose `subscribe` answer has been written.
    var activeSubscriptions: [Subscription] { state.withLock { $0.machine.activeSubscriptions } }
}
