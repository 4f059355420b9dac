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
        let loops = state.withLock { state in
            let watcher = outbox.map { Watcher(outbox: $0, loop: ObjectIdentifier($0.channel.eventLoop)) }
            switch subscription.mode {
            case .actions:
                state.actionSubscribers += 1
                if let watcher, let eventLoop = outbox?.channel.eventLoop {
                    state.loops[watcher.loop, default: Loop(eventLoop: eventLoop)]
                        .actionsWatchers[ObjectIdentifier(watcher.outbox), default: watcher].subscriptions += 1
                }
                return [any EventLoop]()
            case .value, .patch:
                if state.paths[subscription.path] == nil { state.valuelessPaths += 1 }
                state.paths[subscription.path, default: Watched()].subscribers += 1
                if let watcher {
                    state.paths[subscription.path]!.watchers[ObjectIdentifier(watcher.outbox), default: watcher].subscriptions += 1
                }
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
                if let id, let loop, state.loops[loop]?.actionsWatchers[id] != nil {
                    state.loops[loop]!.actionsWatchers[id]!.subscriptions -= 1
                    if state.loops[loop]!.actionsWatchers[id]!.subscriptions == 0 { state.loops[loop]!.actionsWatchers[id] = nil }
                }
            case .value, .patch:
                state.paths[subscription.path]?.subscribers -= 1
                if let id, state.paths[subscription.path]?.watchers[id] != nil {
                    state.paths[subscription.path]!.watchers[id]!.subscriptions -= 1
                    if state.paths[subscription.path]!.watchers[id]!.subscriptions == 0 { state.paths[subscription.path]!.watchers[id] = nil }
                }
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
