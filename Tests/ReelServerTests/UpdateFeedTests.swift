import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
@testable import ReelServer
import Testing

/// The newest state as the tests set it between commits, which a feed made by ``feed()`` reads.
final class NewestState: @unchecked Sendable {
    var seq: UInt64 = 1
    var json: JSONValue = ["a": 1, "b": 1]
    /// While set, reading the state fails (as a state that does not convert to JSON does).
    var unreadable = false

    func feed() -> UpdateFeed {
        UpdateFeed(seq: seq, readActions: { _, _, _ in [] }, latestState: { () throws(RPCError) in
            if self.unreadable { throw RPCError(code: RPCError.Code.internalError, message: "the state cannot be read") }
            return (self.seq, self.json)
        })
    }

    /// A commit of one action that leaves the state `json` at `seq`, handed to `feed`.
    func commit(_ seq: UInt64, _ json: JSONValue, to feed: UpdateFeed) {
        self.seq = seq
        self.json = json
        feed.committed([
            ActionEnvelope(seq: seq, action: Action(type: "set"), time: Timestamp(nanosecondsSince1970: 0), peer: .unknown)
        ])
    }
}

/// The update feed's shared encodings: what it keeps is bounded, slices follow on from each other
/// across commits, and values know when they changed.
struct UpdateFeedTests {
    func feed(json: JSONValue = [:], seq: UInt64 = 0) -> UpdateFeed {
        UpdateFeed(
            seq: 0,
            readActions: { _, _, _ in [] },
            latestState: { (seq, json) }
        )
    }

    func envelopes(_ seqs: ClosedRange<UInt64>) -> [ActionEnvelope] {
        seqs.map {
            ActionEnvelope(seq: $0, action: Action(type: "set", payload: ["path": "/n", "value": .int(Int64($0))]),
                           time: Timestamp(nanosecondsSince1970: Int64($0)), peer: Peer(uid: 1, gid: 1, pid: 1))
        }
    }

    /// The actions a `.actions` answer holds, parsed back.
    func seqs(_ next: UpdateFeed.NextActions) throws -> [Int64] {
        guard case .actions(let slices, _) = next else { return [] }
        let joined = slices.map { String(buffer: $0) }.joined(separator: ",")
        let array = try JSONValue(parsing: "[" + joined + "]")
        return array.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
    }

    /// A feed with an actions-mode subscriber, handed `count` actions (more than it keeps) in
    /// commits of 100, with a delivery round (`prepare`) every `roundEvery` commits, or none.
    func actionsFeed(afterCommitting count: UInt64, roundEvery: UInt64?) -> UpdateFeed {
        let feed = feed()
        feed.watch(Subscription(id: "s1", path: .root, mode: .actions, seq: 0, value: .null))
        for commit in 0..<(count / 100) {
            feed.committed(envelopes((commit * 100 + 1)...(commit * 100 + 100)))
            if let roundEvery, (commit + 1) % roundEvery == 0 { feed.prepare() }
        }
        return feed
    }

    @Test func actionsFollowOnAcrossCommitsAndTheOldestAreLeftToTheLog() throws {
        // A delivery round every ten commits.
        let feed = actionsFeed(afterCommitting: 30_000, roundEvery: 10)
        // Long gone from the pages: read from the log, up to the newest.
        guard case .fromLog(let latest) = feed.actions(after: 0, limit: 500) else {
            Issue.record("the oldest actions should be left to the log")
            return
        }
        #expect(latest == 30_000)
        // Recent ones: sliced across commits, in order, 500 at most.
        #expect(try seqs(feed.actions(after: 29_250, limit: 500)) == Array(29_251...29_750))
        #expect(try seqs(feed.actions(after: 29_950, limit: 500)) == Array(29_951...30_000))
        guard case .upToDate = feed.actions(after: 30_000, limit: 500) else {
            Issue.record("nothing after the newest")
            return
        }
        // What is kept stays within its bound, less at most one commit's page.
        #expect(kept(by: feed, through: 30_000) <= UpdateFeed.keptActions)
        #expect(kept(by: feed, through: 30_000) > UpdateFeed.keptActions - 100)
    }

    /// How many actions before `last` the feed still has encoded.
    func kept(by feed: UpdateFeed, through last: UInt64) -> Int {
        var kept = 0
        var after = last
        while after > 0, case .actions = feed.actions(after: after - 1, limit: 1) {
            kept += 1
            after -= 1
        }
        return kept
    }

    /// Event loops that never come round (all busy) do not make the feed hold more: past the
    /// bound, what was handed over is dropped, and the subscribers read it from the log.
    @Test func whatWaitsForEncodingIsBoundedToo() {
        let feed = actionsFeed(afterCommitting: 30_000, roundEvery: nil)
        feed.prepare()
        #expect(kept(by: feed, through: 30_000) <= UpdateFeed.keptActions)
        guard case .fromLog(let latest) = feed.actions(after: 0, limit: 500) else {
            Issue.record("the dropped actions are read from the log")
            return
        }
        #expect(latest == 30_000)
    }

    @Test func actionsHandedOverButNotYetEncodedWaitForTheirRound() {
        let feed = feed()
        feed.watch(Subscription(id: "s1", path: .root, mode: .actions, seq: 0, value: .null))
        feed.committed(envelopes(1...10))
        feed.prepare()
        feed.committed(envelopes(11...20))
        // Not a log read: the delivery round the commit asked for brings them.
        guard case .upToDate = feed.actions(after: 10, limit: 500) else {
            Issue.record("actions handed over should wait for their round, not be read from the log")
            return
        }
        feed.prepare()
        guard case .actions(_, let last) = feed.actions(after: 10, limit: 500) else {
            Issue.record("the round brings them")
            return
        }
        #expect(last == 20)
    }

    @Test func valuesKnowWhenTheyChangedAndSharePatchesFromThePreviousValue() throws {
        let state = NewestState()
        let feed = state.feed()
        let path = try JSONPointer("/a")
        feed.watch(Subscription(id: "s1", path: path, mode: .patch, seq: 1, value: 1))
        feed.prepare()
        let first = try #require(feed.value(at: path))
        #expect(first.value == 1 && first.changedAt == 1 && first.previous == nil)

        // A commit elsewhere: the value is as of the new seq, unchanged since 1.
        state.commit(2, ["a": 1, "b": 2], to: feed)
        feed.prepare()
        let unchanged = try #require(feed.value(at: path))
        #expect(unchanged.seq == 2 && unchanged.changedAt == 1)

        state.commit(3, ["a": 5, "b": 2], to: feed)
        feed.prepare()
        let changed = try #require(feed.value(at: path))
        #expect(changed.value == 5 && changed.changedAt == 3 && changed.previous == 1 && changed.previousChangedAt == 1)
        #expect(String(buffer: changed.encoded) == "5")
        let patch = try #require(feed.sharedPatch(at: path, changedAt: 3))
        #expect(String(buffer: patch) == #"[{"op":"replace","path":"","value":5}]"#)
        // Asked for another change than the current one: none shared.
        #expect(feed.sharedPatch(at: path, changedAt: 2) == nil)
    }

    /// What a value subscriber is given: nothing when it is up to date, a newer seq alone when
    /// only other paths changed (its value is still the value), the newest value otherwise (or
    /// when its value came from its `subscribe` answer, which the feed cannot compare).
    @Test func aValueSubscriberIsToldOnlyWhatItNeeds() throws {
        let state = NewestState()
        let feed = state.feed()
        let path = try JSONPointer("/a")
        feed.watch(Subscription(id: "s1", path: path, mode: .value, seq: 1, value: 1))
        guard case .none = feed.valueNews(at: path, after: 1, fromFeed: false) else {
            Issue.record("no value read yet: nothing to give")
            return
        }
        feed.prepare()
        guard case .none = feed.valueNews(at: path, after: 1, fromFeed: true) else {
            Issue.record("up to date: nothing to give")
            return
        }

        state.commit(2, ["a": 1, "b": 2], to: feed)
        feed.prepare()
        guard case .sameValue(let seq) = feed.valueNews(at: path, after: 1, fromFeed: true) else {
            Issue.record("only /b changed: a newer seq, the same value")
            return
        }
        #expect(seq == 2)
        guard case .newer(let fromAnswer) = feed.valueNews(at: path, after: 1, fromFeed: false) else {
            Issue.record("a value from the subscribe answer is compared with the newest")
            return
        }
        #expect(fromAnswer.value == 1 && fromAnswer.seq == 2)

        state.commit(3, ["a": 5, "b": 2], to: feed)
        feed.prepare()
        guard case .newer(let changed) = feed.valueNews(at: path, after: 2, fromFeed: true) else {
            Issue.record("/a changed: the newest value")
            return
        }
        #expect(changed.value == 5 && changed.changedAt == 3)
        guard case .none = feed.valueNews(at: try JSONPointer("/c"), after: 0, fromFeed: true) else {
            Issue.record("an unwatched path: nothing")
            return
        }
    }

    /// A path first watched after the values were read gets its value at the next round, with no
    /// commit in between (the feed counts the paths without one).
    @Test func aPathWatchedBetweenCommitsGetsItsValueAtTheNextRound() throws {
        let feed = UpdateFeed(seq: 4, readActions: { _, _, _ in [] }, latestState: { (4, ["a": 1, "b": 2]) })
        feed.watch(Subscription(id: "s1", path: try JSONPointer("/a"), mode: .value, seq: 4, value: 1))
        feed.prepare()
        #expect(feed.value(at: try JSONPointer("/a"))?.value == 1)
        let later = try JSONPointer("/b")
        feed.watch(Subscription(id: "s2", path: later, mode: .value, seq: 4, value: 2))
        #expect(feed.value(at: later) == nil)
        feed.prepare()
        #expect(feed.value(at: later)?.value == 2)
        // Unwatched before any round read it, then watched again: still read.
        let third = try JSONPointer("/c")
        let gone = Subscription(id: "s3", path: third, mode: .value, seq: 4, value: .null)
        feed.watch(gone)
        feed.unwatch(gone)
        feed.watch(Subscription(id: "s4", path: third, mode: .value, seq: 4, value: .null))
        feed.prepare()
        #expect(feed.value(at: third)?.value == .null)
    }
}
