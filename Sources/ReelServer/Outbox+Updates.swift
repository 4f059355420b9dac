import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol

extension Outbox {
    /// Actions sent per update in actions mode, at most.
    static var actionsPerUpdate: Int { 500 }
    private static let comma = ByteBuffer(bytes: [UInt8(ascii: ",")])

    /// On the event loop: writes to each active subscription what it has not had yet, from the
    /// feed's shared encodings, while the socket takes more. What the socket does not take now
    /// waits: value and patch modes are computed again from the newest value (coalesced), actions
    /// mode goes on from its last delivered seq (``socketBecameWritable()`` calls this again).
    func deliverUpdates() {
        guard let channel, let feed, channel.isActive, writesUpdates else { return }
        var wrote = false
        for subscription in activeSubscriptions {
            guard channel.isWritable else { break }
            switch subscription.mode {
            case .actions: wrote = deliverActions(to: subscription, feed: feed, channel: channel) || wrote
            case .value, .patch: wrote = deliverValue(to: subscription, feed: feed, channel: channel) || wrote
            }
        }
        if wrote { channel.flush() }
    }

    private func deliverActions(to subscription: Subscription, feed: UpdateFeed, channel: any Channel) -> Bool {
        var wrote = false
        while channel.isWritable {
            let delivered = subscription.delivered.seq
            switch feed.actions(after: delivered, limit: Self.actionsPerUpdate) {
            case .upToDate:
                return wrote
            case .actions(let slices, let last):
                channel.write(ByteBuffer(bytes: UpdateLine.actionsHead), promise: nil)
                for (position, slice) in slices.enumerated() {
                    // (Pages end without a comma: one goes between the slices of two pages.)
                    if position > 0 { channel.write(Self.comma, promise: nil) }
                    channel.write(slice, promise: nil)
                }
                channel.write(ByteBuffer(bytes: UpdateLine.actionsTail(seq: last, subscription: subscription.id)), promise: nil)
                subscription.delivered.seq = last
                wrote = true
            case .fromLog(let latest):
                catchUp(subscription, after: delivered, through: latest, feed: feed, channel: channel)
                return wrote
            }
        }
        return wrote
    }

    /// Reads the actions after `delivered` from the log (off the event loop), then writes them on
    /// the event loop if nothing else was delivered meanwhile, and carries on from there.
    private func catchUp(
        _ subscription: Subscription, after delivered: UInt64, through latest: UInt64, feed: UpdateFeed, channel: any Channel
    ) {
        guard subscription.startCatchingUp() else { return }
        Task {
            let actions: [ActionEnvelope]?
            do {
                actions = try await feed.readActions(delivered + 1, latest, Self.actionsPerUpdate)
            } catch {
                actions = nil
            }
            channel.eventLoop.execute {
                subscription.finishCatchingUp()
                guard let actions else {
                    // The log cannot be read: end the connection rather than skip actions.
                    channel.close(promise: nil)
                    return
                }
                if let last = actions.last, subscription.delivered.seq == delivered, self.writesUpdates {
                    var bytes = UpdateLine.actionsHead
                    for (position, envelope) in actions.enumerated() {
                        if position > 0 { bytes.append(UInt8(ascii: ",")) }
                        envelope.writeWire(into: &bytes)
                    }
                    bytes += UpdateLine.actionsTail(seq: last.seq, subscription: subscription.id)
                    channel.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
                    subscription.delivered.seq = last.seq
                }
                self.deliverUpdates()
            }
        }
    }

    private func deliverValue(to subscription: Subscription, feed: UpdateFeed, channel: any Channel) -> Bool {
        guard let current = feed.value(at: subscription.path) else { return false }
        let delivered = subscription.delivered
        guard delivered.seq < current.seq else { return false }
        enum Send { case nothing, value, sharedPatch, ownPatch }
        let send: Send
        if !delivered.fromFeed {
            // Delivered from the `subscribe` result: the feed does not know that value.
            send = delivered.value == current.value ? .nothing : subscription.mode == .value ? .value : .ownPatch
        } else if delivered.seq >= current.changedAt {
            send = .nothing
        } else if current.previous != nil, delivered.seq >= current.previousChangedAt {
            send = subscription.mode == .value ? .value : .sharedPatch  // it holds the previous value
        } else {
            send = subscription.mode == .value ? .value : .ownPatch
        }
        subscription.delivered = Subscription.Delivered(seq: current.seq, value: current.value, fromFeed: true)
        switch send {
        case .nothing:
            return false
        case .value:
            channel.write(ByteBuffer(bytes: UpdateLine.valueHead(seq: current.seq, subscription: subscription.id)), promise: nil)
            channel.write(current.encoded, promise: nil)
            channel.write(ByteBuffer(bytes: UpdateLine.valueTail), promise: nil)
        case .sharedPatch, .ownPatch:
            let shared = send == .sharedPatch ? feed.sharedPatch(at: subscription.path, changedAt: current.changedAt) : nil
            let patch = shared ?? ByteBuffer(bytes: JSONPatch(from: delivered.value, to: current.value).jsonValue.serialized())
            channel.write(ByteBuffer(bytes: UpdateLine.patchHead), promise: nil)
            channel.write(patch, promise: nil)
            channel.write(ByteBuffer(bytes: UpdateLine.patchTail(seq: current.seq, subscription: subscription.id)), promise: nil)
        }
        return true
    }
}
