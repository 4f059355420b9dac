import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol

/// What a value or patch subscriber is sent next.
enum ValueSend { case nothing, value, sharedPatch, ownPatch }

extension Outbox {
    /// Actions sent per update in actions mode, at most.
    static var actionsPerUpdate: Int { 500 }

    /// On the event loop: writes to each active subscription what it has not had yet, from the
    /// feed's shared encodings, while the socket takes more. What the socket does not take now
    /// waits: value and patch modes are computed again from the newest value (coalesced), actions
    /// mode goes on from its last delivered seq (``socketBecameWritable()`` calls this again).
    func deliverUpdates() {
        guard let feed, channel.isActive, writesUpdates else { return }
        feed.prepare()
        var wrote = false
        for subscription in activeSubscriptions {
            guard channel.isWritable else { break }
            switch subscription.mode {
            case .actions: wrote = deliverActions(to: subscription, feed: feed, channel: channel) || wrote
            case .value, .patch: wrote = deliverValue(to: subscription, feed: feed, channel: channel) || wrote
            }
        }
        if wrote { flush(channel) }
    }

    private func deliverActions(to subscription: Subscription, feed: UpdateFeed, channel: any Channel) -> Bool {
        var wrote = false
        while channel.isWritable {
            let delivered = subscription.delivered.seq
            let shared = subscription.feed != nil
            let next = shared
                ? feed.actionLines(after: delivered, limit: Self.actionsPerUpdate) : feed.actions(after: delivered, limit: Self.actionsPerUpdate)
            switch next {
            case .upToDate:
                return wrote
            case .actions(let lines, let last) where shared:
                // The feed's lines as they are: the same bytes every subscriber of it is written
                // (a reference to them, not a copy), gathered into one `writev` by the flush.
                for line in lines { write(line, on: channel) }
                subscription.delivered.seq = last
                wrote = true
            case .actions(let slices, let last):
                let tail = UpdateLine.actionsTail(seq: last, subscription: subscription.id)
                // One buffer per update: a write costs a trip through the pipeline, a copy less.
                var line = channel.allocator.buffer(
                    capacity: UpdateLine.actionsHead.count + slices.reduce(slices.count) { $0 + $1.readableBytes } + tail.count
                )
                line.writeBytes(UpdateLine.actionsHead)
                for (position, slice) in slices.enumerated() {
                    // (Pages end without a comma: one goes between the slices of two pages.)
                    if position > 0 { line.writeInteger(UInt8(ascii: ",")) }
                    line.writeImmutableBuffer(slice)
                }
                line.writeBytes(tail)
                write(line, on: channel)
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
                    if let name = subscription.feed {
                        bytes += UpdateLine.actionsTail(seq: last.seq, feed: name)
                    } else {
                        bytes += UpdateLine.actionsTail(seq: last.seq, subscription: subscription.id)
                    }
                    self.write(ByteBuffer(bytes: bytes), on: channel)
                    self.flush(channel)
                    subscription.delivered.seq = last.seq
                }
                self.deliverUpdates()
            }
        }
    }

    private func deliverValue(to subscription: Subscription, feed: UpdateFeed, channel: any Channel) -> Bool {
        let position = subscription.deliveredSeq
        let current: UpdateFeed.PathValue
        switch feed.valueNews(at: subscription.path, after: position.seq, fromFeed: position.fromFeed) {
        case .none:
            return false
        case .sameValue(let seq):
            subscription.advanceDelivered(to: seq)
            return false
        case .newer(let newest):
            current = newest
        }
        let delivered = subscription.delivered
        guard delivered.seq < current.seq else { return false }
        let send: ValueSend
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
        if let name = subscription.feed {
            return deliverFeedValue(send: send, feed: name, current: current, delivered: delivered.value, subscription: subscription, updates: feed, channel: channel)
        }
        switch send {
        case .nothing:
            return false
        case .value:
            write(UpdateLine.valueHead(seq: current.seq, subscription: subscription.id), current.encoded, UpdateLine.valueTail, to: channel)
        case .sharedPatch, .ownPatch:
            let shared = send == .sharedPatch ? feed.sharedPatch(at: subscription.path, changedAt: current.changedAt) : nil
            let patch = shared ?? ByteBuffer(bytes: JSONPatch(from: delivered.value, to: current.value).jsonValue.serialized())
            write(UpdateLine.patchHead, patch, UpdateLine.patchTail(seq: current.seq, subscription: subscription.id), to: channel)
        }
        return true
    }

    /// A shared feed's value or patch update: the feed's line as it is, unless the subscriber
    /// needs a patch of its own (it missed the previous value), which names the feed too.
    private func deliverFeedValue(
        send: ValueSend, feed name: String, current: UpdateFeed.PathValue, delivered: JSONValue, subscription: Subscription,
        updates feed: UpdateFeed, channel: any Channel
    ) -> Bool {
        switch send {
        case .nothing:
            return false
        case .value:
            guard let line = feed.sharedValueLine(at: subscription.path, seq: current.seq, feed: name) else {
                write(UpdateLine.valueHead(seq: current.seq, feed: name), current.encoded, UpdateLine.valueTail, to: channel)
                return true
            }
            write(line, on: channel)
        case .sharedPatch, .ownPatch:
            if send == .sharedPatch, let line = feed.sharedPatchLine(at: subscription.path, seq: current.seq, changedAt: current.changedAt, feed: name) {
                write(line, on: channel)
            } else {
                let patch = ByteBuffer(bytes: JSONPatch(from: delivered, to: current.value).jsonValue.serialized())
                write(UpdateLine.patchHead(feed: name), patch, UpdateLine.patchTail(seq: current.seq), to: channel)
            }
        }
        return true
    }

    /// One line, `head`, `body` and `tail`, in one write.
    private func write(_ head: [UInt8], _ body: ByteBuffer, _ tail: [UInt8], to channel: any Channel) {
        var line = channel.allocator.buffer(capacity: head.count + body.readableBytes + tail.count)
        line.writeBytes(head)
        line.writeImmutableBuffer(body)
        line.writeBytes(tail)
        write(line, on: channel)
    }
}
