import ReelCore
import ReelJSON
import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// The branch writer wakes whoever watches a branch after each commit to it (a branch
/// subscription of the daemon), and no one else.
@Suite struct BranchWriterTests {
    @Test func watchersOfABranchAreWokenAfterEachCommitToItOnly() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(storage: .init(durable: false)))
        _ = try await store.dispatch(Action(type: "set", payload: ["path": "/n", "value": 0]))
        _ = try store.timeline.createBranch("a", at: 1)
        _ = try store.timeline.createBranch("b", at: 1)
        let writer = store.branchWriter
        let wakes = Atomic(0)
        let watch = writer.watchCommits(to: "a") { wakes.add(1, ordering: .relaxed) }
        let increment = Action(type: "increment", payload: ["path": "/n"])
        #expect(try writer.dispatch([increment], toBranch: "a", peer: .currentProcess).seqs == 2...2)
        #expect(try writer.dispatch([increment, increment], toBranch: "a", peer: .currentProcess).seqs == 3...4)
        _ = try writer.dispatch([increment], toBranch: "b", peer: .currentProcess)
        #expect(wakes.load(ordering: .relaxed) == 2, "one wake per commit to the branch watched")
        // The state it keeps after its last dispatch there is the branch's state at that seq.
        let kept = try #require(try writer.keptState(of: "a"))
        let rebuilt = try store.timeline.branch(named: "a").state(at: 4)
        #expect(kept.seq == 4 && kept.state == rebuilt)
        #expect(kept.state["n"] == 3)
        // A refused dispatch commits nothing and wakes no one.
        #expect(throws: StoreError.self) {
            try writer.dispatch([Action(type: "increment", payload: ["path": "/n", "by": "x"])], toBranch: "a", peer: .currentProcess)
        }
        writer.stopWatching(watch)
        _ = try writer.dispatch([increment], toBranch: "a", peer: .currentProcess)
        #expect(wakes.load(ordering: .relaxed) == 2)
        await store.close()
    }
}
