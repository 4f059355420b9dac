import NIOCore
import ReelJSON
import ReelProtocol
import Synchronization

/// A connection's ``ConnectionStateMachine`` under a lock, shared by its reader (which reserves
/// and fills slots), the event loop (which writes answers and updates) and the tasks of its
/// requests: it carries out what the machine decides, and keeps only what the machine cannot, the
/// waiting (readers waiting for room) and the channel.
///
/// Whoever fills the slot that makes answers ready (the store's writer thread, for a dispatch)
/// schedules one task on the channel's event loop, which takes every ready answer and writes them
/// with one flush — one hop from the commit to the socket. Subscription updates are written on
/// the event loop too (``deliverUpdates()``, from the ``UpdateFeed``), so answers and updates have
/// one writer. The answers are taken in order under the lock, and written in the same task that
/// took them, so no later write can overtake them. After the last answer (one that closes the
/// connection, or the last owed once the input ended) the event loop closes the channel, once
/// everything written before has reached the socket.
final class Outbox: Sendable {
    typealias Slot = ConnectionStateMachine.Slot

    fileprivate struct Locked {
        var machine: ConnectionStateMachine
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        /// The context of the handler nearest the socket (``WritabilityRelay``): answers and
        /// updates are written from there, without passing through the handlers above it, which
        /// have nothing to do with them.
        var head: NIOLoopBound<ChannelHandlerContext>?
        /// Told when a reservation the intake was refused may succeed (``onRoom(_:)``).
        var onRoom: (@Sendable () -> Void)?
    }

    private let state: Mutex<Locked>
    /// What answers are taken and encoded into, on the event loop (``writeOnEventLoop()``).
    private let answerBuffers: NIOLoopBoundBox<AnswerBuffers>
    /// Where answers and updates are written, by its event loop.
    let channel: any Channel
    /// Where subscriptions get their updates from.
    let feed: UpdateFeed?
    /// Where refused dispatches are counted as their answers are encoded.
    let figures: ServerFigures?

    init(maxInFlight: Int, channel: any Channel, feed: UpdateFeed? = nil, figures: ServerFigures? = nil) {
        self.channel = channel
        self.feed = feed
        self.figures = figures
        let machine = ConnectionStateMachine(maxInFlight: maxInFlight, usesFeed: feed != nil)
        state = Mutex(Locked(machine: machine))
        answerBuffers = .makeBoxSendingValue(AnswerBuffers(), eventLoop: channel.eventLoop)
    }

    /// Takes the next slot, waiting while `maxInFlight` answers are outstanding.
    /// - Returns: `nil` once the output stopped (the peer is gone).
    func reserve() async -> Int? {
        while true {
            let reservation = state.withLock { $0.machine.reserve() }
            switch reservation {
            case .slot(let index): return index
            case .stopped: return nil
            case .full:
                await withCheckedContinuation { continuation in
                    let waiting = state.withLock { state in
                        // Room may have come, or the output stopped, since the reservation.
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
    /// through ``onRoom(_:)`` when a refused reservation may succeed: room came, or the output
    /// stopped.
    func tryReserve() -> ConnectionStateMachine.Reservation {
        state.withLock { $0.machine.reserveForIntake() }
    }

    /// Sets what ``tryReserve()``'s caller is told when room may have come.
    func onRoom(_ callback: @escaping @Sendable () -> Void) {
        state.withLock { $0.onRoom = callback }
    }

    /// Fills a slot and gets it written by the event loop; with `close`, the connection closes
    /// after this answer.
    func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, close: Bool = false) {
        fill(index, with: .line(bytes), activating: subscription, close: close)
    }

    /// Fills a slot and gets it written by the event loop; with `close`, the connection closes
    /// after this answer.
    func fill(_ index: Int, with answer: Answer, activating subscription: Subscription? = nil, close: Bool = false) {
        let action = state.withLock { $0.machine.fill(index, with: answer, activating: subscription, closing: close) }
        switch action {
        case .none: break
        case .scheduleEventLoopWrite: channel.eventLoop.execute { self.writeOnEventLoop() }
        }
    }

    /// On the event loop: writes every ready answer with one flush, if the machine says so, and
    /// closes the connection after the last.
    private func writeOnEventLoop() {
        let writable = channel.isWritable
        var storage = answerBuffers.value.takeSlots()
        var (ready, waiters, intake) = state.withLock { state in
            let ready = state.machine.takeReadyForEventLoop(socketWritable: writable, reusing: &storage)
            return state.taking(ready)
        }
        release(waiters, intake)
        if !ready.slots.isEmpty {
            write(answerBuffers.value.encode(ready.slots, figures: figures), on: channel)
            if !ready.closesAfterWriting { flush(channel) }
            if ready.deliverUpdates { deliverUpdates() }
        }
        if ready.closesAfterWriting { closeAfterWrites(channel) }
        // (Nothing taken while the socket takes no more: the memory given stayed here.)
        if storage.capacity > ready.slots.capacity { swap(&storage, &ready.slots) }
        answerBuffers.value.keep(&ready.slots)
    }

    /// On the event loop: closes the channel once everything written so far reached the socket.
    ///
    /// A close drops the writes NIO still holds (the last answers to a peer that reads slowly);
    /// an empty write completes only after every write before it, so the close waits for it. A
    /// peer that never reads keeps the connection open until the server closes every connection
    /// (its shutdown time limit: ``ConnectionRegistry``).
    private func closeAfterWrites(_ channel: any Channel) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        if let head = state.withLock({ $0.head }) {
            head.value.writeAndFlush(NIOAny(ByteBuffer()), promise: written)
        } else {
            channel.writeAndFlush(ByteBuffer(), promise: written)
        }
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
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
        guard writesUpdates else { return }
        writeOnEventLoop()
        deliverUpdates()
    }

    /// Whether updates may be written now: output goes on, and no answer closed the connection.
    var writesUpdates: Bool { state.withLock { $0.machine.writesUpdates } }

    /// Registers a subscription (inactive until its answer is written) and tells the feed, which
    /// keeps what it needs from the next commit on.
    /// - Returns: `false` when the connection already has `limit` subscriptions, or has ended.
    func add(_ subscription: Subscription, limit: Int) -> ConnectionStateMachine.AddAction {
        // The feed is told under this lock (the feed never calls in here holding its own), so that
        // a connection ending meanwhile cannot leave it registered.
        state.withLock { state in
            let action = state.machine.add(subscription, limit: limit)
            guard case .added(let register) = action else { return action }
            guard let feed, state.machine.usesFeed else { return action }
            feed.watch(subscription, by: self)
            if register { feed.register(self, on: channel.eventLoop) }
            return action
        }
    }

    /// Forgets a subscription. Returns whether it existed.
    func remove(subscription id: String) -> Bool {
        state.withLock { state in
            guard let removed = state.machine.remove(subscription: id) else { return false }
            if state.machine.usesFeed { feed?.unwatch(removed, by: self) }
            return true
        }
    }

    /// No more requests: what is left is written, then the connection closes (now, if nothing is
    /// owed).
    func close() {
        let now = state.withLock { $0.machine.endInput() }
        guard now else { return }
        channel.eventLoop.execute { self.closeAfterWrites(self.channel) }
    }

    /// The output stopped (the connection closed): release the readers waiting for room and the
    /// feed.
    func abort() {
        let (waiters, intake) = state.withLock { state in
            let stop = state.machine.stopOutput()
            if let feed {
                for subscription in stop.unwatch { feed.unwatch(subscription, by: self) }
                if stop.unregisterFromFeed { feed.unregister(self, on: channel.eventLoop) }
            }
            defer { state.roomWaiters = [] }
            return (state.roomWaiters, stop.notifyIntake ? state.onRoom : nil)
        }
        release(waiters, intake)
    }

    private func release(_ waiters: [CheckedContinuation<Void, Never>], _ intake: (@Sendable () -> Void)?) {
        for waiter in waiters { waiter.resume() }
        intake?()
    }

    /// The subscriptions whose `subscribe` answer has been written.
    var activeSubscriptions: [Subscription] { state.withLock { $0.machine.activeSubscriptions } }
}

/// The memory a connection's answers are taken and encoded into, kept from one write to the next:
/// writing answers then allocates nothing once it is large enough. (Each write allocated four
/// times: the array of slots taken, the encoded bytes, and the `ByteBuffer`'s object and memory;
/// with one dispatch in flight per client, that was a quarter of a dispatch's allocations.)
private struct AnswerBuffers {
    /// Memory larger than this (a large query's answer) is let go once written, not kept for the
    /// life of the connection.
    static let keptBytes = 64 << 10

    private var slots: [Outbox.Slot] = []
    /// Where the answers are encoded before they are copied into `buffer` at once.
    private var bytes: [UInt8] = []
    /// Given to the channel, which holds it until it is written; reused (`clear()` in place)
    /// once the channel let go of it, copied (by `ByteBuffer`'s copy on write) while it has not.
    private var buffer = ByteBuffer()

    /// The empty array the next slots are taken into.
    mutating func takeSlots() -> [Outbox.Slot] {
        var taken: [Outbox.Slot] = []
        swap(&taken, &slots)
        return taken
    }

    /// Keeps the array of slots taken, emptied, for the next write; lets go of memory grown past
    /// ``keptBytes``.
    mutating func keep(_ taken: inout [Outbox.Slot]) {
        swap(&slots, &taken)
        slots.removeAll(keepingCapacity: slots.capacity <= Self.keptBytes / 64)
        bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptBytes)
        if buffer.capacity > Self.keptBytes { buffer = ByteBuffer() }
    }

    /// The slots' answers, one after the other.
    mutating func encode(_ taken: [Outbox.Slot], figures: ServerFigures?) -> ByteBuffer {
        bytes.removeAll(keepingCapacity: true)
        for slot in taken {
            switch slot.answer! {
            case .line(let line): bytes += line
            case .dispatch(let settled): settled.encode(into: &bytes, figures: figures)
            }
        }
        buffer.clear()
        buffer.writeBytes(bytes)
        return buffer
    }
}

extension Outbox.Locked {
    /// What was taken, and who to release for it: the readers waiting for room when room was
    /// freed, and the intake when the machine says it waits.
    fileprivate mutating func taking(
        _ ready: ConnectionStateMachine.Ready
    ) -> (ConnectionStateMachine.Ready, [CheckedContinuation<Void, Never>], (@Sendable () -> Void)?) {
        guard ready.freedRoom else { return (ready, [], nil) }
        defer { roomWaiters = [] }
        return (ready, roomWaiters, ready.notifyIntake ? onRoom : nil)
    }
}
