import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// Dispatching through the real writer into real LMDB files.
@Suite(.heavy) struct StoreDispatchTests {
    func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    @Test func dispatchAssignsGaplessSeqsAndPublishesState() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        #expect(try await store.dispatch(set("/a", 1)).seq == 1)
        #expect(try await store.dispatch(Action(type: "increment", payload: ["path": "/a", "by": 2])).seq == 2)
        #expect(store.snapshot.seq == 2)
        #expect(store.snapshot.state == ["a": 3])
        await store.close()
    }

    @Test func concurrentDispatchersGetDistinctGaplessSeqsAndShareCommits() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let tasks = 64, perTask = 20
        let seqs = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var mine: [UInt64] = []
                    for i in 0..<perTask {
                        let action = Action(type: "increment", payload: ["path": .string("/t\(task)"), "by": .int(Int64(i))])
                        mine.append(try await store.dispatch(action).seq)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let total = tasks * perTask
        #expect(seqs.sorted() == Array(1...UInt64(total)))
        let statistics = store.statistics
        #expect(statistics.actionsCommitted == UInt64(total))
        #expect(statistics.commits < UInt64(total), "no commit carried more than one action")
        for task in 0..<tasks {
            #expect(store.snapshot.state["t\(task)"] == .int(Int64((0..<perTask).reduce(0, +))))
        }
        await store.close()
    }

    @Test func aLoneDispatchIsCommittedOnTheCallersThread() async throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try Store(path: dir.path, definition: .stock)
            for value in 1...5 {
                let ticket = store.submit(batch: [set("/a", .int(Int64(value)))], commitIfAlone: true)
                // Nothing else in flight: committed before `submit` returned.
                #expect(ticket.isSettled)
                #expect(try await ticket.result().seq == UInt64(value))
            }
            #expect(store.snapshot.state == ["a": 5])
            #expect(store.statistics.commits == 5)
            await store.close()
        }
        // Durable like any other: the next open has them.
        let reopened = try Store(path: dir.path, definition: .stock)
        #expect(reopened.snapshot.seq == 5)
        #expect(reopened.snapshot.state == ["a": 5])
        await reopened.close()
    }

    /// A batch of prepared dispatches reaches the writer only when submitted, all at once: one
    /// group, seqs in the order prepared, a refusal among them answered on its own; a batch of one
    /// may be committed on the caller's thread.
    @Test func aPreparedBatchIsHandedOverWholeAndInOrder() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        var batch = DispatchBatch()
        var tickets: [DispatchTicket] = []
        for value in 1...6 {
            tickets.append(store.prepare(batch: [set("/a", .int(Int64(value)))], into: &batch))
        }
        tickets.append(store.prepare(batch: [], into: &batch))  // no actions: refused
        // A round trip through the writer's queue: whatever had been handed to the writer before
        // it is settled when it returns.
        #expect(await store.probeWriter())
        #expect(!tickets.contains { $0.isSettled }, "dispatched before the batch was submitted")
        #expect(store.snapshot.seq == 0)
        #expect(!store.submit(batch))
        for (index, ticket) in tickets.prefix(6).enumerated() { #expect(try await ticket.result().seq == UInt64(index + 1)) }
        await #expect(throws: StoreError.self) { try await tickets[6].result() }
        #expect(store.statistics.commits == 1, "the batch was split across commits")
        #expect(store.snapshot.state == ["a": 6])

        // The writer thread answers a group's tickets before it lets go of the commit, so on a
        // busy machine a lone dispatch right after may find it still committing and queue
        // instead: then the next one, once that is answered, finds it idle.
        var committedAlone = false
        for attempt in 0..<100 where !committedAlone {
            var alone = DispatchBatch()
            let ticket = store.prepare(batch: [set("/b", .int(Int64(attempt)))], into: &alone)
            committedAlone = store.submit(alone, commitIfAlone: true)
            if committedAlone { #expect(ticket.isSettled) }
            #expect(try await ticket.result().seq == UInt64(7 + attempt))
        }
        #expect(committedAlone, "no lone dispatch was committed on the caller's thread")
        await store.close()
    }

    /// Lone commits on callers' threads and the writer thread's commits, mixed: one gapless order,
    /// every increment applied once.
    @Test func loneCommitsAndGroupCommitsShareOneOrder() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let seqs = await withTaskGroup(of: [UInt64].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var seqs: [UInt64] = []
                    for _ in 0..<150 {
                        let ticket = store.submit(
                            batch: [Action(type: "increment", payload: ["path": "/n"])], commitIfAlone: task % 2 == 0
                        )
                        if let seq = try? await ticket.result().seq { seqs.append(seq) }
                    }
                    return seqs
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(seqs.sorted() == Array(1...1200))
        #expect(store.snapshot.state == ["n": 1200])
        await store.close()
    }

    @Test func aRejectedActionInABatchRejectsTheWholeBatch() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        try await store.dispatch(set("/keep", true))
        do {
            try await store.dispatch(batch: [set("/a", 1), set("/b", 2), Action(type: "remove", payload: ["path": "/nope"])])
            Issue.record("the batch was accepted")
        } catch {
            #expect(error.code == .rejected)
        }
        #expect(store.snapshot.seq == 1)
        #expect(store.snapshot.state == ["keep": true])
        #expect(try store.timeline.latestSeq() == 1)
        let result = try await store.dispatch(batch: [set("/a", 1), set("/b", 2)])
        #expect(result.seqs == 2...3)
        await store.close()
    }

    @Test func unknownTypesAndStaleExpectedSeqAreRefused() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        await #expect(throws: StoreError.self) { try await store.dispatch(Action(type: "frobnicate")) }
        do {
            try await store.dispatch(Action(type: "frobnicate"))
        } catch {
            #expect(error.code == .unknownActionType)
        }
        try await store.dispatch(set("/a", 1), expectedSeq: 0)
        do {
            try await store.dispatch(set("/a", 2), expectedSeq: 0)
            Issue.record("a stale expectedSeq was accepted")
        } catch {
            #expect(error.code == .seqMismatch)
            #expect(error.currentSeq == 1)
        }
        #expect(store.snapshot.state == ["a": 1])
        await store.close()
    }

    @Test func idempotencyKeysAnswerRetriesWithTheFirstResult() async throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try Store(path: dir.path, definition: .stock)
            let first = try await store.dispatch(Action(type: "increment", payload: ["path": "/n"]), idempotencyKey: "k1")
            let retry = try await store.dispatch(Action(type: "increment", payload: ["path": "/n"]), idempotencyKey: "k1")
            #expect(first == DispatchResult(seqs: 1...1))
            #expect(retry == DispatchResult(seqs: 1...1, duplicate: true))
            let batch = try await store.dispatch(batch: [set("/x", 1), set("/y", 2)], idempotencyKey: "k2")
            #expect(batch.seqs == 2...3)
            #expect(store.snapshot.state == ["n": 1, "x": 1, "y": 2])
            await store.close()
        }
        // The keys are durable: a retry after a restart is still recognised.
        let reopened = try Store(path: dir.path, definition: .stock)
        let retry = try await reopened.dispatch(set("/x", 100), idempotencyKey: "k2")
        #expect(retry == DispatchResult(seqs: 2...3, duplicate: true))
        #expect(reopened.snapshot.state == ["n": 1, "x": 1, "y": 2])
        await reopened.close()
    }

    @Test func concurrentRetriesWithOneKeyApplyOnce() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let results = try await withThrowingTaskGroup(of: DispatchResult.self) { group in
            for _ in 0..<16 {
                group.addTask { try await store.dispatch(Action(type: "increment", payload: ["path": "/n"]), idempotencyKey: "same") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.seqs)) == [1...1])
        #expect(results.filter { !$0.duplicate }.count == 1)
        #expect(store.snapshot.state == ["n": 1])
        await store.close()
    }

    @Test func dispatchAfterCloseIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        await store.close()
        do {
            try await store.dispatch(set("/a", 1))
            Issue.record("dispatch after close was accepted")
        } catch {
            #expect(error.code == .shuttingDown)
        }
    }

    @Test func aTinyMapGrowsWithoutLosingActions() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 500)
        options.storage.initialMapSize = 64 << 10
        let blob = JSONValue.string(String(repeating: "x", count: 2_000))
        do {
            let store = try Store(path: dir.path, definition: .stock, options: options)
            for i in 0..<2_000 {
                try await store.dispatch(set("/k\(i % 50)", blob))
            }
            #expect(store.directory.mapSize > 64 << 10)
            await store.close()
        }
        let reopened = try Store(path: dir.path, definition: .stock, options: options)
        #expect(reopened.snapshot.seq == 2_000)
        var seen = 0
        try reopened.directory.forEachEnvelope(from: 1) { envelope in
            seen += 1
            return envelope.payload["value"] == blob
        }
        #expect(seen == 2_000)
        await reopened.close()
    }

    @Test func aFailedCommitAcknowledgesNothingAndChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions()
        options.storage.initialMapSize = 256 << 10
        options.storage.maxMapSize = 1 << 20
        let store = try Store(path: dir.path, definition: .stock, options: options)
        try await store.dispatch(set("/small", 1))
        // 2 MiB cannot fit a map capped at 1 MiB: the commit fails as on a full disk.
        let huge = JSONValue.string(String(repeating: "z", count: 2 << 20))
        do {
            try await store.dispatch(set("/huge", huge))
            Issue.record("a commit beyond the maximum map size was acknowledged")
        } catch {
            #expect(error.code == .storage)
        }
        #expect(store.snapshot.seq == 1)
        #expect(store.snapshot.state == ["small": 1])
        #expect(try store.timeline.latestSeq() == 1)
        #expect(store.statistics.commitFailures == 1)
        // Nothing was half-written: the store goes on with the next seq.
        #expect(try await store.dispatch(set("/small", 2)).seq == 2)
        #expect(store.snapshot.state == ["small": 2])
        await store.close()
    }
}

/// Watching commits: what subscription hubs build on.
@Suite(.heavy) struct CommitStreamTests {
    @Test func aWatcherHearsTheLatestSeqAndTheEndOfTheStore() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        try await store.dispatch(Action(type: "set", payload: ["path": "/a", "value": 1]))
        var iterator = store.commits().makeAsyncIterator()
        #expect(await iterator.next() == 1)
        for value in 2...4 {
            try await store.dispatch(Action(type: "set", payload: ["path": "/a", "value": .int(Int64(value))]))
        }
        // Coalesced: the watcher did not read in between, so it sees the newest seq only.
        #expect(await iterator.next() == 4)
        // A refused dispatch commits nothing and wakes no one.
        await #expect(throws: StoreError.self) { try await store.dispatch(Action(type: "remove", payload: ["path": "/zzz"])) }
        try await store.dispatch(Action(type: "set", payload: ["path": "/b", "value": true]))
        #expect(await iterator.next() == 5)
        await store.close()
        #expect(await iterator.next() == nil)
        var late = store.commits().makeAsyncIterator()
        #expect(await late.next() == 5)
        #expect(await late.next() == nil)
    }
}

/// What the store tells its commit observers (the server's update feed): each commit's actions
/// and, when the writer records them, the pointers they changed.
@Suite(.heavy) struct CommitObserverTests {
    /// Every commit's envelopes' seqs and changed pointers (string form, sorted; `nil` unknown).
    final class Heard: @unchecked Sendable {
        let lock = NSLock()
        var commits: [(seqs: [UInt64], changed: [String]?)] = []
    }

    func observed(_ store: Store<JSONValue>) -> Heard {
        let heard = Heard()
        store.observeCommittedActions { envelopes, changes in
            let changed = changes?.changedPointers()?.map(\.description).sorted()
            heard.lock.withLock { heard.commits.append((envelopes.map(\.seq), changed)) }
        }
        return heard
    }

    @Test func eachCommitComesWithThePointersItChanged() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let heard = observed(store)
        _ = try await store.dispatch(Action(type: "set", payload: ["path": "/a", "value": ["b": ["c": 1]]]))
        _ = try await store.dispatch(Action(type: "merge", payload: ["a": ["b": ["c": 2]], "x": true]))
        _ = try await store.dispatch(batch: [
            Action(type: "set", payload: ["path": "/n", "value": 1]), Action(type: "set", payload: ["path": "/a/b/c", "value": 2]),
        ])
        await store.close()
        let commits = heard.lock.withLock { heard.commits }
        #expect(commits.map(\.seqs) == [[1], [2], [3, 4]])
        #expect(commits[0].changed == ["", "/a", "/a/b", "/a/b/c"])
        #expect(commits[1].changed == ["", "/a", "/a/b", "/a/b/c", "/x"])
        // A batch: the changes of its actions together (setting /a/b/c to the value it has changes nothing).
        #expect(commits[2].changed == ["", "/n"])
    }

    @Test func withoutTheChangeIndexTheChangesAreNotKnown() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions()
        options.changeIndex = false
        let store = try Store(path: dir.path, definition: .stock, options: options)
        let heard = observed(store)
        _ = try await store.dispatch(Action(type: "set", payload: ["path": "/a", "value": 1]))
        await store.close()
        let commits = heard.lock.withLock { heard.commits }
        #expect(commits.map(\.seqs) == [[1]])
        #expect(commits[0].changed == nil)
    }
}
