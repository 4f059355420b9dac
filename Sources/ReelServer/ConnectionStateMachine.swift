import DequeModule

/// Everything that decides what one connection writes, closes or waits for, as a plain value
/// without I/O or locks (``Outbox`` guards it and carries out the actions it returns), tested on
/// its own.
///
/// Requests of a connection run concurrently (a `dispatch` waits for its commit while a `get`
/// needs nothing), but their answers go out in request order: each request takes a slot when it
/// is read, fills it when done, and the leading filled slots are written. Subscription updates are
/// not queued at all: they are computed from the latest state when the socket has room, which is
/// what keeps a slow subscriber's memory bounded and its updates coalesced. A subscription becomes
/// active only once its `subscribe` answer is written, so no update overtakes the answer that
/// announces it.
///
/// The connection's event loop writes the answers, in one task per batch of ready answers, and
/// closes the connection after the last: an answer that closes it (a framing error's), or the
/// last one owed once the input ended.
struct ConnectionStateMachine {
    struct Slot {
        /// The answer, once the request is done.
        var answer: Answer?
        /// A subscription that becomes active once this (its `subscribe` answer) is written.
        var activates: Subscription?
        /// Close the connection after writing this.
        var closesConnection = false

        /// The answer's bytes when it is an encoded line.
        var bytes: [UInt8]? {
            if case .line(let bytes) = answer { bytes } else { nil }
        }
    }

    /// The outcome of asking for a slot.
    enum Reservation: Equatable {
        /// The slot to fill with the answer.
        case slot(Int)
        /// `maxInFlight` answers are outstanding: read no
        /// more until one is written.
        case full
        /// The output stopped (the peer is gone, or an answer closed the connection): read no
        /// more at all.
        case stopped
    }

    /// What to do after a slot was filled.
    enum FillAction: Equatable {
        /// Nothing now: the first answer owed is not ready, a write is already scheduled, or the
        /// output stopped.
        case none
        /// Schedule one task on the event loop to write what is ready
        /// (``takeReadyForEventLoop(socketWritable:)``).
        case scheduleEventLoopWrite
    }

    /// What is written now, and who else to tell.
    struct Ready {
        /// The leading filled slots, in order.
        var slots: [Slot] = []
        /// Whether the input ended and every answer is now taken: the connection is done.
        var drained = false
        /// Whether slots were freed: readers waiting for room may go on.
        var freedRoom: Bool { !slots.isEmpty }
        /// Whether the event loop's intake waits for room and must hear of it.
        var notifyIntake = false
        /// Whether an answer written announces a subscription, which may already be behind the
        /// feed: deliver updates after writing.
        var deliverUpdates: Bool { slots.contains { $0.activates != nil } }
        /// These are the last answers (one closes the connection, or the input ended and nothing
        /// else is owed): close the connection once they are written.
        var closesAfterWriting: Bool { drained || slots.last?.closesConnection == true }
    }

    /// What to do when a subscription is added.
    enum AddAction: Equatable {
        /// The connection has `limit` subscriptions already, or its output stopped.
        case refused
        /// The connection has a shared subscription of the same feed already (this id).
        case feedTaken(by: String)
        /// Added; tell the feed to watch it, and to register this connection when it is its first.
        case added(registerWithFeed: Bool)
    }

    /// What to release when the output stops.
    struct Stop {
        /// The subscriptions the feed watched for this connection.
        var unwatch: [Subscription] = []
        /// Whether this connection was registered with the feed.
        var unregisterFromFeed = false
        /// Whether the event loop's intake waits for room and must hear that there will be none.
        var notifyIntake = false
    }

    /// The most requests in flight on one connection; reading more waits (backpressure on the peer).
    let maxInFlight: Int
    /// Whether subscriptions are served from an update feed (a server's connection; tests of
    /// the outbox alone have none).
    let usesFeed: Bool
    private var slots: Deque<Slot> = []
    private var firstIndex = 0  // the index of slots.first
    private var subscriptions: [String: Subscription] = [:]
    /// The subscriptions whose `subscribe` answer has been written, in that order.
    private(set) var activeSubscriptions: [Subscription] = []
    private var inputEnded = false
    /// No more output: the peer is gone.
    private(set) var outputStopped = false
    /// An answer that closes the connection was taken: nothing is written after it.
    private(set) var closing = false
    /// A task is on its way to the event loop to write what is ready.
    private var eventLoopWriteScheduled = false
    /// The intake was refused a slot and waits to hear of room.
    private var intakeWaiting = false
    private var registeredWithFeed = false

    init(maxInFlight: Int, usesFeed: Bool = false) {
        precondition(maxInFlight > 0, "maxInFlight must be positive")
        self.maxInFlight = maxInFlight
        self.usesFeed = usesFeed
    }

    // MARK: Reading: slots for requests

    /// A request was read (or an update is to be written in turn with the answers): it takes the
    /// next slot, if there is room.
    mutating func reserve() -> Reservation {
        if outputStopped || closing { return .stopped }
        guard slots.count < maxInFlight else { return .full }
        slots.append(Slot())
        return .slot(firstIndex + slots.count - 1)
    }

    /// A request was read by the event loop's intake: as ``reserve()``, and a refused intake is
    /// told when room may have come (``Ready/notifyIntake``).
    mutating func reserveForIntake() -> Reservation {
        let reservation = reserve()
        if reservation == .full { intakeWaiting = true }
        return reservation
    }

    /// Whether ``reserve()`` would answer ``Reservation/full``: a reader that must wait for room.
    var isFull: Bool { !outputStopped && !closing && slots.count >= maxInFlight }

    /// Whether the first answer owed is ready.
    var hasReadyAnswer: Bool { slots.first?.answer != nil }

    /// Whether the input ended and every answer was taken: the connection is done.
    var isDrained: Bool { inputEnded && slots.isEmpty }

    // MARK: Answers

    /// A request's answer is ready.
    mutating func fill(_ index: Int, with answer: Answer, activating subscription: Subscription? = nil, closing: Bool = false) -> FillAction {
        guard !outputStopped, !self.closing else { return .none }
        slots[index - firstIndex] = Slot(answer: answer, activates: subscription, closesConnection: closing)
        guard hasReadyAnswer, !eventLoopWriteScheduled else { return .none }
        eventLoopWriteScheduled = true
        return .scheduleEventLoopWrite
    }

    /// ``fill(_:with:activating:closing:)`` with an encoded line.
    mutating func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, closing: Bool = false) -> FillAction {
        fill(index, with: .line(bytes), activating: subscription, closing: closing)
    }

    /// On the event loop, in the task a fill scheduled (or when the socket takes writes again):
    /// every ready answer, unless the socket takes no more now (the answers wait in their slots, so
    /// reading stops when they fill up).
    mutating func takeReadyForEventLoop(socketWritable: Bool) -> Ready {
        var none: [Slot] = []
        return takeReadyForEventLoop(socketWritable: socketWritable, reusing: &none)
    }

    /// ``takeReadyForEventLoop(socketWritable:)`` into `storage`'s memory.
    ///
    /// - Parameter storage: An empty array whose memory the taken slots reuse, moved into the
    ///   answer (the event loop keeps one from write to write).
    mutating func takeReadyForEventLoop(socketWritable: Bool, reusing storage: inout [Slot]) -> Ready {
        eventLoopWriteScheduled = false
        guard socketWritable else { return Ready() }
        return takeReady(reusing: &storage)
    }

    /// The leading filled slots, in order, up to an answer that closes the connection (nothing
    /// is taken after it), freeing their places for new requests; subscriptions they announce
    /// become active.
    mutating func takeReady() -> Ready {
        var none: [Slot] = []
        return takeReady(reusing: &none)
    }

    /// ``takeReady()`` into `storage`'s memory (moved into the answer).
    mutating func takeReady(reusing storage: inout [Slot]) -> Ready {
        var ready = Ready()
        swap(&ready.slots, &storage)
        while !closing, let first = slots.first, first.answer != nil {
            ready.slots.append(slots.removeFirst())
            firstIndex += 1
            if first.closesConnection { closing = true }
            if let subscription = first.activates, subscriptions[subscription.id] != nil {
                activeSubscriptions.append(subscription)
            }
        }
        ready.drained = inputEnded && slots.isEmpty
        if ready.freedRoom { ready.notifyIntake = takeIntakeWaiting() }
        return ready
    }

    /// Whether updates may be written now: output goes on and no answer closed the connection.
    var writesUpdates: Bool { !outputStopped && !closing }

    // MARK: Subscriptions

    /// Registers a subscription, inactive until its answer is written.
    mutating func add(_ subscription: Subscription, limit: Int) -> AddAction {
        guard !outputStopped, subscriptions.count < limit else { return .refused }
        if let feed = subscription.feed, let other = subscriptions.values.first(where: { $0.feed == feed }) {
            return .feedTaken(by: other.id)
        }
        subscriptions[subscription.id] = subscription
        guard usesFeed else { return .added(registerWithFeed: false) }
        defer { registeredWithFeed = true }
        return .added(registerWithFeed: !registeredWithFeed)
    }

    /// Forgets a subscription (`unsubscribe`). Returns it, `nil` when there is none of that id.
    mutating func remove(subscription id: String) -> Subscription? {
        guard let removed = subscriptions.removeValue(forKey: id) else { return nil }
        activeSubscriptions.removeAll { $0.id == id }
        return removed
    }

    // MARK: The end

    /// No more requests will be read (the peer ended its input, or the daemon stops): what is
    /// left is written and the connection closes. Returns whether nothing is owed (nor a write on
    /// its way, which closes the connection after it): close it now.
    mutating func endInput() -> Bool {
        inputEnded = true
        return slots.isEmpty && !eventLoopWriteScheduled && !closing
    }

    /// The output stopped (the connection closed): nothing more is written, readers waiting for
    /// room go on (to find none), subscriptions end.
    mutating func stopOutput() -> Stop {
        outputStopped = true
        var stop = Stop(notifyIntake: takeIntakeWaiting())
        if usesFeed {
            stop.unwatch = Array(subscriptions.values)
            stop.unregisterFromFeed = registeredWithFeed
        }
        subscriptions = [:]
        activeSubscriptions = []
        registeredWithFeed = false
        return stop
    }

    /// Whether the intake waits for room, which it then no longer does.
    private mutating func takeIntakeWaiting() -> Bool {
        defer { intakeWaiting = false }
        return intakeWaiting
    }
}
