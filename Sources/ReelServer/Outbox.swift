import NIOCore
import ReelJSON
import ReelProtocol
import Synchronization

/// A connection's ``ConnectionStateMachine``, shared by its reader (which reserves and fills
/// slots) and its writer (which takes what is ready), with the waiting the machine leaves out: a
/// reader waits for room, the writer for something to write.
///
/// Answers go out one of two ways. A connection starts with **direct answers**: whoever fills the
/// slot that makes answers ready (the store's writer thread, for a dispatch) schedules one task on
/// the channel's event loop, which takes every ready answer and writes them with one flush — one
/// hop from the commit to the socket. Subscription updates are written on the event loop too
/// (``deliverUpdates()``, from the ``UpdateFeed``), so answers and updates have one writer. An
/// answer that closes the connection switches it to its writer task (``AnswerWriter``) for good.
/// Either way the answers are taken in order under the lock, and a direct write happens on the
/// event loop in the same task that took them, so no later write can overtake them.
final class Outbox: Sendable {
    typealias Slot = ConnectionStateMachine.Slot

    fileprivate struct Locked {
        var machine: ConnectionStateMachine
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        /// Registered with the feed (at the first subscription).
        var fed = false
        /// The context of the handler nearest the socket (``WritabilityRelay``): direct answers and
        /// updates are written from there, without passing through the handlers above it, which
        /// have nothing to do with them.
        var head: NIOLoopBound<ChannelHandlerContext>?
        /// Answers are written by the event loop (see above), not by the writer task.
        var direct: Bool
        var directWriteScheduled = false
        /// Requests are taken only once the server admitted the connection (under its limit).
        var admitted = false
        /// The event loop's intake was refused a slot and waits to hear of room.
        var intakeWaiting = false
        var onRoom: (@Sendable () -> Void)?
    }

    private let state: Mutex<Locked>
    /// Where direct answers and updates are written; `nil`: answers always through the writer
    /// task, and no updates (tests of the reader side).
    let channel: (any Channel)?
    /// Where subscriptions get their updates from.
    let feed: UpdateFeed?
    /// Where refused dispatches are counted as their answers are encoded.
    let figures: ServerFigures?
    private let wakeups: AsyncStream<Void>.Continuation
    /// Yields when the writer may have something to do (coalesced: one pending wake-up at most).
    let wakeupStream: AsyncStream<Void>

    init(maxInFlight: Int, channel: (any Channel)? = nil, feed: UpdateFeed? = nil, figures: ServerFigures? = nil) {
        self.channel = channel
        self.feed = feed
        self.figures = figures
        state = Mutex(Locked(machine: ConnectionStateMachine(maxInFlight: maxInFlight), direct: channel != nil))
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

    /// Takes the next slot if there is room, for the event loop's ``RequestIntake``, which is told
    /// through ``onRoom(_:)`` when a refused reservation may succeed: room came, the connection was
    /// admitted, or the writer stopped.
    func tryReserve() -> ConnectionStateMachine.Reservation {
        state.withLock { state in
            guard state.admitted else {
                state.intakeWaiting = true
                return .full
            }
            let reservation = state.machine.reserve()
            if reservation == .full { state.intakeWaiting = true }
            return reservation
        }
    }

    /// Sets what ``tryReserve()``'s caller is told when room may have come.
    func onRoom(_ callback: @escaping @Sendable () -> Void) {
        state.withLock { $0.onRoom = callback }
    }

    /// The server admitted the connection: requests may be taken.
    func admit() {
        let callback = state.withLock { state in
            state.admitted = true
            return state.takeRoomCallback()
        }
        callback?()
    }

    /// Fills a slot and gets it written: directly, or by waking the writer task.
    func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, close: Bool = false) {
        fill(index, with: .line(bytes), activating: subscription, close: close)
    }

    /// Fills a slot and gets it written: directly, or by waking the writer task.
    func fill(_ index: Int, with answer: Answer, activating subscription: Subscription? = nil, close: Bool = false) {
        enum Next { case nothing, wakeWriter, scheduleDirectWrite }
        let next = state.withLock { state -> Next in
            guard state.machine.fill(index, with: answer, activating: subscription, closing: close) else { return .nothing }
            guard state.direct else { return .wakeWriter }
            guard state.machine.hasReadyAnswer, !state.directWriteScheduled else { return .nothing }
            state.directWriteScheduled = true
            return .scheduleDirectWrite
        }
        switch next {
        case .nothing: break
        case .wakeWriter: wake()
        case .scheduleDirectWrite: channel!.eventLoop.execute { self.writeDirectly() }
        }
    }

    /// On the event loop: writes every ready answer, with one flush, unless the socket is not
    /// taking more (the answers wait in their slots, so reading stops when they fill up, until
    /// ``socketBecameWritable()``) or the connection switched to its writer task.
    private func writeDirectly() {
        guard let channel else { return }
        let writable = channel.isWritable
        let (ready, waiters, intake) = state.withLock {
            state -> (ConnectionStateMachine.Ready, [CheckedContinuation<Void, Never>], (@Sendable () -> Void)?) in
            state.directWriteScheduled = false
            guard state.direct, writable else { return (ConnectionStateMachine.Ready(), [], nil) }
            let ready = state.machine.takeReady()
            guard ready.freedRoom else { return (ready, [], nil) }
            defer { state.roomWaiters = [] }
            return (ready, state.roomWaiters, state.takeRoomCallback())
        }
        for waiter in waiters { waiter.resume() }
        intake?()
        if !ready.slots.isEmpty {
            write(ByteBuffer(bytes: Self.encode(ready.slots, figures: figures)), on: channel)
            flush(channel)
            // A subscription its answer just announced may already be behind the feed.
            if ready.slots.contains(where: { $0.activates != nil }) { deliverUpdates() }
        }
        // The last answers after the input ended: the writer task closes the connection.
        if ready.drained { wake() }
    }

    /// Where writes start: the handler nearest the socket, once it is in the pipeline.
    func attach(head context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        state.withLock { $0.head = bound }
    }

    func detachHead() {
        state.withLock { $0.head = nil }
    }

    /// On the event loop: writes `buffer` from the head context (or the channel's tail, before it).
    func write(_ buffer: ByteBuffer, on channel: any Channel) {
        if let head = state.withLock({ $0.head }) {
            head.value.write(NIOAny(buffer), promise: nil)
        } else {
            channel.write(buffer, promise: nil)
        }
    }

    func flush(_ channel: any Channel) {
        if let head = state.withLock({ $0.head }) { head.value.flush() } else { channel.flush() }
    }

    /// On the event loop, when the socket takes writes again.
    func socketBecameWritable() {
        guard state.withLock({ $0.direct }) else { return }
        writeDirectly()
        deliverUpdates()
    }

    /// Whether updates may be written now: answers are direct (not closing) and writing goes on.
    var writesUpdates: Bool { state.withLock { $0.direct && !$0.machine.writerStopped } }

    /// From now on the writer task writes the answers (before an answer that closes the
    /// connection); no more updates are written.
    func useWriterTask() {
        state.withLock { $0.direct = false }
        wake()
    }

    /// Registers a subscription (inactive until its answer is written) and tells the feed, which
    /// keeps what it needs from the next commit on.
    /// - Returns: `false` when the connection already has `limit` subscriptions, or has ended.
    func add(_ subscription: Subscription, limit: Int) -> Bool {
        // The feed is told under this lock (the feed never calls in here holding its own), so that
        // a connection ending meanwhile cannot leave it registered.
        state.withLock { state in
            guard !state.machine.writerStopped, state.machine.add(subscription, limit: limit) else { return false }
            guard let feed, let channel else { return true }
            feed.watch(subscription)
            if !state.fed { feed.register(self, on: channel.eventLoop) }
            state.fed = true
            return true
        }
    }

    /// Forgets a subscription. Returns whether it existed.
    func remove(subscription id: String) -> Bool {
        state.withLock { state in
            guard let removed = state.machine.remove(subscription: id) else { return false }
            feed?.unwatch(removed)
            return true
        }
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
        let (waiters, intake) = state.withLock { state in
            state.machine.stopWriting()
            if let feed {
                for subscription in state.machine.removeAllSubscriptions() { feed.unwatch(subscription) }
                if state.fed, let channel { feed.unregister(self, on: channel.eventLoop) }
                state.fed = false
            }
            defer { state.roomWaiters = [] }
            return (state.roomWaiters, state.takeRoomCallback())
        }
        for waiter in waiters { waiter.resume() }
        intake?()
        wakeups.finish()
    }

    /// The leading filled slots, in order; frees their places for new requests. With direct
    /// answers, none (the event loop writes them), but whether the connection is done.
    func takeReady() -> (slots: [Slot], drained: Bool) {
        let (ready, waiters, intake) = state.withLock {
            state -> (ConnectionStateMachine.Ready, [CheckedContinuation<Void, Never>], (@Sendable () -> Void)?) in
            if state.direct { return (ConnectionStateMachine.Ready(slots: [], drained: state.machine.isDrained), [], nil) }
            let ready = state.machine.takeReady()
            guard ready.freedRoom else { return (ready, [CheckedContinuation<Void, Never>](), nil) }
            defer { state.roomWaiters = [] }
            return (ready, state.roomWaiters, state.takeRoomCallback())
        }
        for waiter in waiters { waiter.resume() }
        intake?()
        return (ready.slots, ready.drained)
    }

    /// The slots' answers, one after the other (all of them: a direct write never closes).
    static func encode(_ slots: some Collection<Slot>, figures: ServerFigures?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(slots.reduce(0) { $0 + ($1.answer?.estimatedSize ?? 0) })
        for slot in slots { slot.answer!.encode(into: &bytes, figures: figures) }
        return bytes
    }

    /// The subscriptions whose `subscribe` answer has been written.
    var activeSubscriptions: [Subscription] { state.withLock { $0.machine.activeSubscriptions } }
}

extension Outbox.Locked {
    /// The intake's callback when it waits for room, which it then no longer does.
    fileprivate mutating func takeRoomCallback() -> (@Sendable () -> Void)? {
        guard intakeWaiting else { return nil }
        intakeWaiting = false
        return onRoom
    }
}
