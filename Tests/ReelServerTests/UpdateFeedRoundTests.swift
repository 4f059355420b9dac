import NIOCore
import NIOEmbedded
import ReelCore
import ReelJSON
import ReelProtocol
@testable import ReelServer
import Testing

/// Which connections a delivery round visits: those whose watched path changed (or got its first
/// value) and those with an actions-mode subscription, not every subscriber at every commit; and
/// a subscriber left alone on a quiet path is not reported behind.
struct UpdateFeedRoundTests {
    /// A connection on its own embedded channel with one active subscription.
    func subscriber(_ id: String, path: String, mode: SubscriptionMode, feed: UpdateFeed) throws -> (Outbox, EmbeddedChannel) {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/reel-test")).wait()
        let outbox = Outbox(maxInFlight: 4, channel: channel, feed: feed)
        let subscription = Subscription(id: id, path: try JSONPointer(path), mode: mode, seq: 1, value: mode == .actions ? .null : 1)
        guard case .added = outbox.add(subscription, limit: 8), case .slot(let slot) = outbox.tryReserve() else {
            throw TestFailure("the subscription was not added")
        }
        // Active once its answer is written.
        outbox.fill(slot, with: Array("{}\n".utf8), activating: subscription)
        channel.embeddedEventLoop.run()
        while try channel.readOutbound(as: ByteBuffer.self) != nil {}
        return (outbox, channel)
    }

    struct TestFailure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    func due(_ feed: UpdateFeed, on channel: EmbeddedChannel) -> Set<ObjectIdentifier> {
        feed.state.withLock { state in
            Set(state.loops[ObjectIdentifier(channel.eventLoop)]?.due.keys.map { $0 } ?? [])
        }
    }

    @Test func aRoundVisitsTheConnectionsWhosePathChanged() throws {
        let store = NewestState()
        let feed = store.feed()
        let (onA, channelA) = try subscriber("a", path: "/a", mode: .value, feed: feed)
        let (onB, channelB) = try subscriber("b", path: "/b", mode: .value, feed: feed)
        feed.prepare()
        // Both paths got their first value: both are due.
        #expect(due(feed, on: channelA) == [ObjectIdentifier(onA)])
        #expect(due(feed, on: channelB) == [ObjectIdentifier(onB)])
        channelA.embeddedEventLoop.run()
        channelB.embeddedEventLoop.run()
        _ = feed.state.withLock { state in
            for key in state.loops.keys { state.loops[key]!.due = [:] }
        }

        store.commit(2, ["a": 2, "b": 1], to: feed)
        feed.prepare()
        #expect(due(feed, on: channelA) == [ObjectIdentifier(onA)], "/a changed")
        #expect(due(feed, on: channelB).isEmpty, "/b did not: its connection is not visited")
    }

    @Test func aQuietSubscriberIsNotBehindAndGetsTheNextChange() throws {
        let store = NewestState()
        let feed = store.feed()
        let (_, channelA) = try subscriber("a", path: "/a", mode: .value, feed: feed)
        let (_, channelB) = try subscriber("b", path: "/b", mode: .value, feed: feed)
        // Commits that change /a only; the rounds run on each connection's loop.
        for seq in UInt64(2)...20 {
            store.commit(seq, ["a": .int(Int64(seq)), "b": 1], to: feed)
            channelA.embeddedEventLoop.run()
            channelB.embeddedEventLoop.run()
        }
        var lines: [String] = []
        while let buffer = try channelA.readOutbound(as: ByteBuffer.self) { lines.append(String(buffer: buffer)) }
        #expect(lines.last?.contains(#""value":20"#) == true, "/a's subscriber has its newest value")
        #expect(try channelB.readOutbound(as: ByteBuffer.self) == nil, "/b's subscriber was sent nothing")
        #expect(feed.subscriptionLags().allSatisfy { $0.lag == 0 }, "neither is behind")

        store.commit(21, ["a": 20, "b": 7], to: feed)
        channelB.embeddedEventLoop.run()
        let update = try #require(try channelB.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: update).contains(#""value":7"#))
    }

    @Test func actionsSubscribersAreVisitedAtEveryCommit() throws {
        let store = NewestState()
        let feed = store.feed()
        let (onActions, channel) = try subscriber("all", path: "", mode: .actions, feed: feed)
        let round = feed.state.withLock { state in
            state.loops.values.first?.actionsWatchers.keys.map { $0 } ?? []
        }
        #expect(round == [ObjectIdentifier(onActions)])
        store.commit(2, ["a": 1, "b": 1], to: feed)
        channel.embeddedEventLoop.run()
        let update = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: update).contains(#""seq":2"#))
    }
}
