import NIOCore
import ReelProtocol

/// The connections whose subscriptions the feed serves, and which of them a delivery round
/// visits (``UpdateFeed/Loop/takeRound()``).
extension UpdateFeed {
    /// A connection whose subscriptions the feed serves, on its channel's event loop.
    func register(_ outbox: Outbox, on eventLoop: any EventLoop) {
        let key = ObjectIdentifier(eventLoop)
        state.withLock { state in
            state.loops[key, default: Loop(eventLoop: eventLoop)].outboxes[ObjectIdentifier(outbox)] = outbox
        }
    }

    func unregister(_ outbox: Outbox, on eventLoop: any EventLoop) {
        let key = ObjectIdentifier(eventLoop), id = ObjectIdentifier(outbox)
        state.withLock { state in
            state.loops[key]?.outboxes[id] = nil
            state.loops[key]?.due[id] = nil
            state.loops[key]?.actionsWatchers[id] = nil
        }
    }

    /// A subscription of `outbox`'s connection starts: the feed keeps what it needs from the next
    /// commit on, and gives the connection a round whenever its path changes (actions mode: at
    /// every commit). (`outbox` is `nil` only in tests of the feed alone.)
    func watch(_ subscription: Subscription, by outbox: Outbox? = nil) {
        let eventLoop = outbox?.channel.eventLoop
        let loops = state.withLock { state in
            switch subscription.mode {
            case .actions:
                state.actionSubscribers += 1
                if let outbox, let eventLoop {
                    state.loops[ObjectIdentifier(eventLoop), default: Loop(eventLoop: eventLoop)].actionsWatchers.add(outbox, on: eventLoop)
                }
                return [any EventLoop]()
            case .value, .patch:
                if state.paths[subscription.path] == nil { state.valuelessPaths += 1 }
                state.paths[subscription.path, default: Watched()].subscribers += 1
                if let outbox, let eventLoop { state.paths[subscription.path]!.watchers.add(outbox, on: eventLoop) }
                // Its value is needed now, not at the next commit, which may be long in coming.
                return state.paths[subscription.path]!.value == nil ? state.scheduleDeliveries() : []
            }
        }
        Self.deliver(on: loops, feed: self)
    }

    func unwatch(_ subscription: Subscription, by outbox: Outbox? = nil) {
        let id = outbox.map { ObjectIdentifier($0) }
        let loop = outbox.map { ObjectIdentifier($0.channel.eventLoop) }
        state.withLock { state in
            switch subscription.mode {
            case .actions:
                state.actionSubscribers -= 1
                if state.actionSubscribers == 0 { state.dropActions() }
                if let id, let loop { state.loops[loop]?.actionsWatchers.remove(id) }
            case .value, .patch:
                state.paths[subscription.path]?.subscribers -= 1
                if let id { state.paths[subscription.path]?.watchers.remove(id) }
                if state.paths[subscription.path]?.subscribers == 0, let removed = state.paths.removeValue(forKey: subscription.path),
                    removed.value == nil
                {
                    state.valuelessPaths -= 1
                }
            }
        }
    }

    /// Every active subscription's mode and how far behind the newest commit its deliveries are,
    /// in seqs (for `stats` and the metrics; it walks every connection, so not for hot paths).
    ///
    /// A value or patch subscriber that holds its path's newest value is not behind, however old
    /// the seq of its last update: a round visits it only when its path changes.
    func subscriptionLags() -> [(mode: SubscriptionMode, lag: UInt64)] {
        let (seq, outboxes, changedAt) = state.withLock { state in
            (state.seq, state.loops.values.flatMap { $0.outboxes.values }, state.paths.compactMapValues { $0.value?.changedAt })
        }
        return outboxes.flatMap { outbox in
            outbox.activeSubscriptions.map { subscription in
                let delivered = subscription.deliveredSeq
                if subscription.mode != .actions, delivered.fromFeed, let changed = changedAt[subscription.path], delivered.seq >= changed {
                    return (subscription.mode, 0)
                }
                return (subscription.mode, seq > delivered.seq ? seq - delivered.seq : 0)
            }
        }
    }
}

extension [ObjectIdentifier: UpdateFeed.Watcher] {
    /// Counts one more subscription of `outbox`'s connection.
    mutating func add(_ outbox: Outbox, on eventLoop: any EventLoop) {
        let watcher = UpdateFeed.Watcher(outbox: outbox, loop: ObjectIdentifier(eventLoop))
        self[ObjectIdentifier(outbox), default: watcher].subscriptions += 1
    }

    /// Counts one subscription fewer of connection `id`, forgetting it at none.
    mutating func remove(_ id: ObjectIdentifier) {
        guard self[id] != nil else { return }
        self[id]!.subscriptions -= 1
        if self[id]!.subscriptions == 0 { self[id] = nil }
    }
}
