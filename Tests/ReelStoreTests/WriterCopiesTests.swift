import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// The writer's two copies of the state (its own, changed in place, and the one readers see):
/// whatever happens to a group, readers see exactly the committed history.
@Suite(.heavy) struct WriterCopiesTests {
    /// The same directory read by replay only, for comparison.
    func replayed(_ store: Store<JSONValue>, at seq: UInt64) throws -> JSONValue {
        try Timeline(directory: store.directory, definition: RecoveryTests.definition(version: "replay-only")).state(at: seq)
    }

    /// Batches that fail halfway, in groups with dispatches accepted before them: each failure
    /// undoes its own batch and nothing else.
    @Test func failingBatchesAmongConcurrentDispatchesUndoOnlyThemselves() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let tasks = 32, rounds = 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    let counter = "/t\(task)"
                    for round in 0..<rounds {
                        try await store.dispatch(Action(type: "increment", payload: ["path": .string(counter)]))
                        // The first action applies, the second cannot (no parent): all or nothing.
                        let doomed = [
                            Action(type: "increment", payload: ["path": .string(counter), "by": 1_000]),
                            Action(type: "set", payload: ["path": .string("/missing/t\(task)/\(round)"), "value": 1]),
                        ]
                        await #expect(throws: StoreError.self) { try await store.dispatch(batch: doomed) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let snapshot = store.snapshot
        #expect(snapshot.seq == UInt64(tasks * rounds))
        for task in 0..<tasks {
            #expect(snapshot.state["t\(task)"] == .int(Int64(rounds)))
        }
        #expect(try replayed(store, at: snapshot.seq) == snapshot.state)
        #expect(store.statistics.commits < UInt64(tasks * rounds), "no group held more than one dispatch")
        // The writer's own copy went on from the same state: later dispatches build on it.
        try await store.dispatch(Action(type: "increment", payload: ["path": "/t0"]))
        #expect(store.snapshot.state["t0"] == .int(Int64(rounds + 1)))
        #expect(try replayed(store, at: store.snapshot.seq) == store.snapshot.state)
        await store.close()
    }

    /// A small state after large groups: the writer keeps the copy it published (no catch-up
    /// fold) and its next changes copy what they touch. Every snapshot taken along the way keeps
    /// the value it was published with, and equals a replay at its seq.
    @Test func aSmallStateSharedAfterLargeGroupsLeavesEverySnapshotAsPublished() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 5))
        func set(_ key: String, _ value: Int) -> Action {
            Action(type: "set", payload: ["path": .string("/\(key)"), "value": .int(Int64(value))])
        }
        // A first checkpoint, so that the state's size is known (it is small).
        for i in 1...6 { try await store.dispatch(set("k\(i)", i)) }
        try await waitUntil("the first checkpoint") { store.statistics.checkpointsWritten > 0 }
        #expect(store.writer.keepsSharingSmallState(afterCommitting: 40))
        #expect(!store.writer.keepsSharingSmallState(afterCommitting: 1), "one action is cheaper to fold again")

        var held: [StoreSnapshot<JSONValue>] = []
        for round in 0..<20 {
            // 40 actions in one group, some of them on nested containers.
            let batch = (0..<40).map { i in
                i % 4 == 0
                    ? Action(type: "merge", payload: ["nested": ["r\(round)": .int(Int64(i))]])
                    : set("k\(i % 10)", round * 100 + i)
            }
            try await store.dispatch(batch: batch)
            held.append(store.snapshot)
        }
        for snapshot in held {
            #expect(try replayed(store, at: snapshot.seq) == snapshot.state, "seq \(snapshot.seq)")
        }
        #expect(held.last?.state["k9"] == .int(1_939))
        #expect(held.last?.state["nested"]?["r0"] == .int(36))
        await store.close()
    }

    /// A reader holding a snapshot keeps its value while the writer takes that copy back and
    /// folds new actions into it.
    @Test func aSnapshotHeldByAReaderKeepsItsValue() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        for i in 1...5 {
            try await store.dispatch(Action(type: "set", payload: ["path": .string("/k\(i)"), "value": .int(Int64(i))]))
        }
        let held = store.snapshot
        for i in 1...10 {
            try await store.dispatch(Action(type: "set", payload: ["path": .string("/k\(i % 3)"), "value": .int(Int64(100 + i))]))
        }
        #expect(held.seq == 5)
        #expect(held.state == ["k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5])
        #expect(try replayed(store, at: 15) == store.snapshot.state)
        await store.close()
    }
}
