import ReelCore
import ReelJSON
@testable import ReelServer
import ReelStorage
@testable import ReelStore
import Testing

extension NewestState {
    /// A commit of one action that leaves the state `json` at `seq`, handed to `feed` with what it
    /// changed, recorded as the writer records it (`unfollowedBelow`: a change left unfollowed
    /// under that pointer as well). `handOver: false` only publishes the state, as the writer
    /// does just before it hands the commit over.
    func commitRecording(
        _ seq: UInt64, _ json: JSONValue, to feed: UpdateFeed, unfollowedBelow: [String]? = nil, handOver: Bool = true
    ) -> (envelopes: [ActionEnvelope], changes: CommitChanges?) {
        let before = self.json
        self.seq = seq
        self.json = json
        let envelopes = [ActionEnvelope(seq: seq, action: Action(type: "set"), time: Timestamp(nanosecondsSince1970: 0), peer: .unknown)]
        var postings = ChangePostings()
        postings.startAction()
        postings.recorder.record(at: [], from: before, to: json)
        if let unfollowedBelow { postings.recorder.recordUnfollowed(at: unfollowedBelow) }
        postings.endAction(seq: seq)
        let changes = CommitChanges(postings, of: envelopes)
        if handOver { feed.committed(envelopes, changes: changes) }
        return (envelopes, changes)
    }
}

/// After a commit the feed reads again only the watched paths the commit changed, when the writer
/// recorded what it changed; every watched path otherwise.
struct UpdateFeedChangesTests {
    let a = try! JSONPointer("/a"), b = try! JSONPointer("/b"), cd = try! JSONPointer("/c/d"), x = try! JSONPointer("/x")

    /// A feed whose state is `{"a":1,"b":1,"c":{"d":1}}` at seq 1, watching /a, /b, /c/d and /x,
    /// with their values read.
    func watchingFourPaths() -> (NewestState, UpdateFeed) {
        let state = NewestState()
        state.json = ["a": 1, "b": 1, "c": ["d": 1]]
        let feed = state.feed()
        for (index, path) in [a, b, cd, x].enumerated() {
            feed.watch(Subscription(id: "s\(index)", path: path, mode: .value, seq: 1, value: .null))
        }
        feed.prepare()
        return (state, feed)
    }

    @Test func onlyThePathsACommitChangedAreReadAgain() throws {
        let (state, feed) = watchingFourPaths()
        #expect(feed.value(at: b)?.seq == 1)

        _ = state.commitRecording(2, ["a": 2, "b": 1, "c": ["d": 1]], to: feed)
        feed.prepare()
        #expect(feed.value(at: a)?.value == 2 && feed.value(at: a)?.seq == 2)
        // Not read again: still the value as of seq 1, which it is as of 2 as well.
        #expect(feed.value(at: b)?.seq == 1 && feed.value(at: cd)?.seq == 1 && feed.value(at: x)?.seq == 1)

        // A parent replaced: the watched path under it changed, and is read.
        _ = state.commitRecording(3, ["a": 2, "b": 1, "c": ["d": 5]], to: feed)
        feed.prepare()
        #expect(feed.value(at: cd)?.value == 5 && feed.value(at: cd)?.changedAt == 3)
        #expect(feed.value(at: a)?.seq == 2 && feed.value(at: b)?.seq == 1)

        // Removed: absent reads as null.
        _ = state.commitRecording(4, ["a": 2, "b": 1], to: feed)
        feed.prepare()
        #expect(feed.value(at: cd)?.value == .null && feed.value(at: cd)?.changedAt == 4)
    }

    @Test func aStateNewerThanTheChangesHandedOverIsCaughtUpByTheNextOnes() throws {
        let (state, feed) = watchingFourPaths()
        _ = state.commitRecording(2, ["a": 2, "b": 1, "c": ["d": 1]], to: feed)
        // Seq 3 is published, but not yet handed over when the round reads the state.
        let third = state.commitRecording(3, ["a": 2, "b": 7, "c": ["d": 1]], to: feed, handOver: false)
        feed.prepare()
        #expect(feed.value(at: a)?.value == 2)
        feed.committed(third.envelopes, changes: third.changes)
        feed.prepare()
        #expect(feed.value(at: b)?.value == 7 && feed.value(at: b)?.changedAt == 3)
    }

    @Test func changesTakenWhenTheStateCouldNotBeReadAreNotLost() throws {
        let (state, feed) = watchingFourPaths()
        state.unreadable = true
        _ = state.commitRecording(2, ["a": 2, "b": 1, "c": ["d": 1]], to: feed)
        feed.prepare()
        #expect(feed.value(at: a)?.value == 1)
        state.unreadable = false
        // The next commit changes /b only: /a's change, taken before, is read all the same.
        _ = state.commitRecording(3, ["a": 2, "b": 3, "c": ["d": 1]], to: feed)
        feed.prepare()
        #expect(feed.value(at: a)?.value == 2 && feed.value(at: b)?.value == 3)
    }

    @Test func aCommitWhoseChangesAreNotKnownReadsEveryPath() throws {
        let (state, feed) = watchingFourPaths()
        // Without what it changed (the change index off): every path read again.
        state.commit(2, ["a": 1, "b": 2, "c": ["d": 1]], to: feed)
        feed.prepare()
        #expect(feed.value(at: b)?.value == 2)
        #expect([a, cd, x].allSatisfy { feed.value(at: $0)?.seq == 2 })

        // A change left unfollowed below /c: any path there may have changed, so every path is read.
        _ = state.commitRecording(3, ["a": 1, "b": 2, "c": ["d": 9]], to: feed, unfollowedBelow: ["c"])
        feed.prepare()
        #expect(feed.value(at: cd)?.value == 9)
        #expect([a, b, x].allSatisfy { feed.value(at: $0)?.seq == 3 })
    }

    @Test func aCommitThatChangedAsManyPathsAsAreWatchedReadsEveryPath() throws {
        let state = NewestState()
        state.json = ["a": 1, "b": 1]
        let feed = state.feed()
        feed.watch(Subscription(id: "s1", path: b, mode: .value, seq: 1, value: .null))
        feed.prepare()
        // The root and /a changed: two pointers for one watched path, which is read.
        _ = state.commitRecording(2, ["a": 2, "b": 1], to: feed)
        feed.prepare()
        #expect(feed.value(at: b)?.seq == 2 && feed.value(at: b)?.changedAt == 1)
    }
}
