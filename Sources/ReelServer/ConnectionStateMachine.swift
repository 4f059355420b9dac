import DequeModule

/// What one connection has to send, in the order it must be sent, and when it is done: the rules
/// of a connection's output as a plain value, without I/O or locks (``Outbox`` guards it), tested
/// on their own.
///
/// Requests of a connection run concurrently (a `dispatch` waits for its commit while a `get`
/// needs nothing), but their answers go out in request order: each request takes a slot when it
/// is read, fills it when done, and the writer sends the leading filled slots. Subscription
/// updates are not queued at all: the writer computes them from the latest state when it has room
/// to send, which is what keeps a slow subscriber's memory bounded and its updates coalesced. A
/// subscription becomes active only once its `subscribe` answer is written, so no update overtakes
/// the answer that announces it.
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
        /// `maxInFlight` answers are outstanding: read no more until the writer frees one.
        case full
        /// The writer stopped (the peer is gone): read no more at all.
        case stopped
    }

    /// What the writer may send now.
    struct Ready {
        /// The leading filled slots, in order.
        var slots: [Slot] = []
        /// Whether the input ended and every answer is now taken: the connection is done.
        var drained = false
        /// Whether slots were freed: a reader waiting for room may go on.
        var freedRoom: Bool { !slots.isEmpty }
    }

    /// The most requests in flight on one connection; reading more waits (backpressure on the peer).
    let maxInFlight: Int
    private var slots: Deque<Slot> = []
    private var firstIndex = 0  // the index of slots.first
    private var subscriptions: [String: Subscription] = [:]
    /// The subscriptions whose `subscribe` answer has been written, in that order.
    private(set) var activeSubscriptions: [Subscription] = []
    private var inputEnded = false
    private(set) var writerStopped = false

    init(maxInFlight: Int) {
        precondition(maxInFlight > 0, "maxInFlight must be positive")
        self.maxInFlight = maxInFlight
    }

    /// A request was read: it takes the next slot, if there is room.
    mutating func reserve() -> Reservation {
        if writerStopped { return .stopped }
        guard slots.count < maxInFlight else { return .full }
        slots.append(Slot())
        return .slot(firstIndex + slots.count - 1)
    }

    /// Whether the first answer owed is ready: ``takeReady()`` would return something.
    var hasReadyAnswer: Bool { slots.first?.answer != nil }

    /// Whether the input ended and every answer was taken: the connection is done.
    var isDrained: Bool { inputEnded && slots.isEmpty }

    /// Whether ``reserve()`` would answer ``Reservation/full``.
    var isFull: Bool { !writerStopped && slots.count >= maxInFlight }

    /// A request's answer is ready.
    /// - Returns: Whether the writer has something new (`false` once it stopped).
    mutating func fill(_ index: Int, with answer: Answer, activating subscription: Subscription? = nil, closing: Bool = false) -> Bool {
        guard !writerStopped else { return false }
        slots[index - firstIndex] = Slot(answer: answer, activates: subscription, closesConnection: closing)
        return true
    }

    /// ``fill(_:with:activating:closing:)`` with an encoded line.
    mutating func fill(_ index: Int, with bytes: [UInt8], activating subscription: Subscription? = nil, closing: Bool = false) -> Bool {
        fill(index, with: .line(bytes), activating: subscription, closing: closing)
    }

    /// Registers a subscription, inactive until its answer is written.
    /// - Returns: `false` when the connection already has `limit` subscriptions.
    mutating func add(_ subscription: Subscription, limit: Int) -> Bool {
        guard subscriptions.count < limit else { return false }
        subscriptions[subscription.id] = subscription
        return true
    }

    /// Forgets a subscription (`unsubscribe`). Returns it, `nil` when there is none of that id.
    mutating func remove(subscription id: String) -> Subscription? {
        guard let removed = subscriptions.removeValue(forKey: id) else { return nil }
        activeSubscriptions.removeAll { $0.id == id }
        return removed
    }

    /// Forgets every subscription (the connection ends). Returns them.
    mutating func removeAllSubscriptions() -> [Subscription] {
        defer {
            subscriptions = [:]
            activeSubscriptions = []
        }
        return Array(subscriptions.values)
    }

    /// No more requests will be read (the peer ended its input, or the daemon stops): the writer
    /// sends what is left and the connection closes.
    mutating func endInput() {
        inputEnded = true
    }

    /// The writer stopped (the peer is gone, or a closing error was sent): nothing more is written.
    mutating func stopWriting() {
        writerStopped = true
    }

    /// The leading filled slots, in order, freeing their places for new requests; subscriptions
    /// they announce become active.
    mutating func takeReady() -> Ready {
        var ready = Ready()
        while let first = slots.first, first.answer != nil {
            ready.slots.append(slots.removeFirst())
            firstIndex += 1
            if let subscription = first.activates, subscriptions[subscription.id] != nil {
                activeSubscriptions.append(subscription)
            }
        }
        ready.drained = inputEnded && slots.isEmpty
        return ready
    }
}
