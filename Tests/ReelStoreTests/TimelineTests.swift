import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// State at a seq, diffs, what-if replays, history and revert, on a real log.
@Suite(.heavy) struct TimelineTests {
    func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    /// seq 1: set /hp 10 · 2: set /name · 3: increment /hp -4 · 4: increment /hp -7 · 5: set /name
    func makeStore(_ dir: borrowing TemporaryDirectory) async throws -> Store<JSONValue> {
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 2))
        try await store.dispatch(set("/hp", 10))
        try await store.dispatch(set("/name", "hero"))
        try await store.dispatch(Action(type: "increment", payload: ["path": "/hp", "by": -4]))
        try await store.dispatch(Action(type: "increment", payload: ["path": "/hp", "by": -7]))
        try await store.dispatch(set("/name", "ghost"))
        return store
    }

    @Test func stateAtEverySeq() async throws {
        let dir = try TemporaryDirectory()
        let store = try await makeStore(dir)
        let timeline = store.timeline
        #expect(try timeline.state(at: 0) == [:])
        #expect(try timeline.state(at: 1) == ["hp": 10])
        #expect(try timeline.state(at: 3) == ["hp": 6, "name": "hero"])
        #expect(try timeline.value(at: 4, path: JSONPointer("/hp")) == -1)
        #expect(throws: StoreError.self) { try timeline.state(at: 6) }
        do {
            _ = try timeline.value(at: 1, path: JSONPointer("/name"))
            Issue.record("found a name at seq 1")
        } catch let error as StoreError {
            #expect(error.code == .pathNotFound)
        }
        await store.close()
    }

    @Test func diffBetweenSeqs() async throws {
        let dir = try TemporaryDirectory()
        let store = try await makeStore(dir)
        let patch = try store.timeline.diff(from: 1, to: 5)
        #expect(patch.operations.count == 2)
        var state = try store.timeline.state(at: 1)
        try patch.apply(to: &state)
        #expect(state == ["hp": -1, "name": "ghost"])
        let slice = try store.timeline.diff(from: 2, to: 5, path: JSONPointer("/name"))
        #expect(slice == JSONPatch([.replace(path: try JSONPointer("/name"), value: "ghost")]))
        let added = try store.timeline.diff(from: 1, to: 2, path: JSONPointer("/name"))
        #expect(added == JSONPatch([.add(path: try JSONPointer("/name"), value: "hero")]))
        await store.close()
    }

    @Test func whatIfReplaySkipsActionsWithoutTouchingTheLog() async throws {
        let dir = try TemporaryDirectory()
        let store = try await makeStore(dir)
        let whatIf = try store.timeline.replay(to: 5, skipping: [4])
        #expect(whatIf.value == ["hp": 6, "name": "ghost"])
        #expect(whatIf.refused.isEmpty)
        let withoutHP = try store.timeline.replay(to: 5, skipping: [1])
        // Without seq 1 there is no /hp: the increments start it from 0 (stock `increment` semantics).
        #expect(withoutHP.value == ["hp": -11, "name": "ghost"])
        #expect(try store.timeline.latestSeq() == 5)
        #expect(store.snapshot.state == ["hp": -1, "name": "ghost"])
        await store.close()
    }

    @Test func historyFiltersAndPages() async throws {
        let dir = try TemporaryDirectory()
        let store = try await makeStore(dir)
        let all = try store.timeline.history()
        #expect(all.actions.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(all.next == nil)
        let sets = try store.timeline.history(types: ["set"])
        #expect(sets.actions.map(\.seq) == [1, 2, 5])
        let page = try store.timeline.history(from: 2, limit: 2)
        #expect(page.actions.map(\.seq) == [2, 3])
        #expect(page.next == 4)
        // Newest first: the same actions reversed, and pages that go on at `next` as their `to`.
        #expect(try store.timeline.history(newestFirst: true).actions.map(\.seq) == [5, 4, 3, 2, 1])
        #expect(try store.timeline.history(types: ["set"], newestFirst: true).actions.map(\.seq) == [5, 2, 1])
        for limit in 1...5 {
            for types in [nil, ["set"], ["nothing"]] as [Set<String>?] {
                var seqs: [UInt64] = []
                var to: UInt64? = 4
                while let last = to {
                    let newest = try store.timeline.history(from: 2, to: last, limit: limit, types: types, newestFirst: true)
                    #expect(newest.actions.count <= limit)
                    seqs += newest.actions.map(\.seq)
                    to = newest.next
                }
                let oldest = try store.timeline.history(from: 2, to: 4, limit: 10, types: types).actions.map(\.seq)
                #expect(seqs == oldest.reversed(), "limit \(limit), types \(String(describing: types))")
            }
        }
        let first = try #require(all.actions.first)
        #expect(first.peer == .currentProcess)
        #expect(first.time.nanosecondsSince1970 > 1_700_000_000_000_000_000)
        await store.close()
    }

    @Test func revertAppendsAnActionThatRestoresAnEarlierState() async throws {
        let dir = try TemporaryDirectory()
        let store = try await makeStore(dir)
        let result = try await store.dispatch(StoreAction.revert(to: 2).action)
        #expect(result.seq == 6)
        #expect(store.snapshot.state == ["hp": 10, "name": "hero"])
        try await store.dispatch(Action(type: "increment", payload: ["path": "/hp"]))
        #expect(store.snapshot.state == ["hp": 11, "name": "hero"])
        #expect(try store.timeline.state(at: 6) == ["hp": 10, "name": "hero"])
        #expect(try store.timeline.history(from: 6, limit: 1).actions.first?.type == "@revert")
        do {
            try await store.dispatch(StoreAction.revert(to: 99).action)
            Issue.record("revert to the future was accepted")
        } catch {
            #expect(error.code == .seqOutOfRange)
        }
        await store.close()
    }
}
