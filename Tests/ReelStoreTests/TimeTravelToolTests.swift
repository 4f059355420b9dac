import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// The store-side engines of `reel bisect`, `reel verify` and `reel import`, on real LMDB files.
@Suite(.heavy) struct TimeTravelToolTests {
    /// A store whose `/n` counts up by one per action, `count` actions, checkpoint every `every`.
    static func counting(_ count: Int, every: UInt64, in directory: borrowing TemporaryDirectory) async throws -> Store<JSONValue> {
        let store = try Store(
            path: directory.sub("data"), definition: .stock,
            options: StoreOptions(checkpointEvery: every, storage: .init(durable: false))
        )
        try await store.dispatch(Action(type: "set", payload: ["path": "/n", "value": 1]))
        var next = 2
        while next <= count {
            let batch = (next...min(count, next + 499)).map { _ in Action(type: "increment", payload: ["path": "/n"]) }
            try await store.dispatch(batch: batch)
            next += batch.count
        }
        return store
    }

    @Test(arguments: [1, 2, 3_333, 4_999, 5_000, 5_001, 9_999, 10_000])
    func bisectFindsTheFirstSeqInLogarithmicProbes(_ target: Int) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(10_000, every: 1_000, in: directory)
        defer { Task { await store.close() } }
        let goal = Int64(target)
        let reached: (JSONValue) -> Bool = { ($0["n"]?.intValue ?? 0) >= goal }
        // About 10 checkpoints plus start and end, then the actions between two of them: about
        // log2(12) + log2(gap) + 2 probes, far below one per action. (A checkpoint due while
        // another is being encoded comes later, and is stored with a later commit, so the gaps
        // are measured, not assumed: before the bisect, which sees these checkpoints or more.)
        let seqs = [0] + (try store.timeline.directory.checkpointHeaders().map(\.seq)) + [10_000]
        let result = try store.timeline.bisect(where: reached)
        #expect(result.seq == UInt64(target))
        let widestGap = Int(zip(seqs, seqs.dropFirst()).map { $1 - $0 }.max() ?? 10_000)
        let probes = result.probes, replayed = result.actionsReplayed
        #expect(probes <= 5 + Int(log2(Double(max(widestGap, 2))).rounded(.up)) + 2, "\(probes) probes with checkpoints at \(seqs)")
        #expect(replayed <= 2 * widestGap, "\(replayed) actions replayed with checkpoints at \(seqs)")
        let before = try store.timeline.bisect(through: UInt64(target - 1), where: reached)
        #expect(before.seq == nil)
    }

    /// The bound seen from the outside: the test counts how often its own condition is evaluated,
    /// at several log sizes, rather than trusting the probe count bisect reports.
    @Test(arguments: [(100, 1_000), (1_000, 1_000), (10_000, 1_000), (10_000, 100_000)])
    func bisectEvaluatesTheConditionLogarithmicallyOften(_ size: Int, _ checkpointEvery: Int) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(size, every: UInt64(checkpointEvery), in: directory)
        defer { Task { await store.close() } }
        // Logarithmic in the checkpoints and in the widest gap between them, as they landed (a
        // checkpoint due while another is being encoded comes later): with one every 1,000 of
        // 10,000 actions, ⌈log2 12⌉ + ⌈log2 1000⌉ + 3 = 17, as ⌈log2 10001⌉ + 3.
        let seqs = [0] + (try store.timeline.directory.checkpointHeaders().map(\.seq)) + [UInt64(size)]
        let widestGap = Int(zip(seqs, seqs.dropFirst()).map { $1 - $0 }.max() ?? UInt64(size))
        let bound = Int(log2(Double(seqs.count)).rounded(.up)) + Int(log2(Double(max(widestGap, 2))).rounded(.up)) + 3
        for target in [1, size / 3, size - 1, size] {
            let evaluations = Counter()
            let result = try store.timeline.bisect { state in
                evaluations.add()
                return (state["n"]?.intValue ?? 0) >= Int64(target)
            }
            #expect(result.seq == UInt64(target))
            #expect(evaluations.value <= bound, "\(evaluations.value) evaluations for \(size) actions (bound \(bound), checkpoints at \(seqs))")
            #expect(evaluations.value == result.probes, "bisect reports \(result.probes) probes for \(evaluations.value) evaluations")
        }
    }

    /// The other half of bisect's cost, also seen from the outside: how many actions the reducers
    /// fold while it rebuilds states. With a checkpoint every C actions, at most two intervals'
    /// worth, whatever the log's size: the state at the end of the log is rebuilt from the nearest
    /// checkpoint once, then the search inside one interval replays forward from the last state
    /// where the condition did not hold (halving each time: about one interval in all). With no
    /// checkpoint, two passes over the log — never one replay per probe.
    @Test(arguments: [(100, 1_000), (1_000, 1_000), (10_000, 1_000), (10_000, 100_000)])
    func bisectFoldsAtMostTwoCheckpointIntervalsOfActions(_ size: Int, _ checkpointEvery: Int) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(size, every: UInt64(checkpointEvery), in: directory)
        defer { Task { await store.close() } }
        let folds = SharedCounter()
        var definition = StoreDefinition<JSONValue>.stock
        let stock = definition.reducer
        definition.reducer = Reduce(stock.actionTypes) { (state: inout JSONValue, action: ActionEnvelope) throws(ReducerError) in
            folds.add()
            try stock.reduce(into: &state, action: action)
        }
        let timeline = Timeline(directory: store.directory, definition: definition)
        // Checkpoints land on commit boundaries, up to one 500-action batch past each multiple;
        // one due while another is being encoded comes later, and is stored with a later commit
        // (so the last may not be stored yet): the widest interval is measured before the
        // bisects, which see these checkpoints or more.
        let seqs = [0] + (try store.directory.checkpointHeaders().map(\.seq)) + [UInt64(size)]
        let widestGap = Int(zip(seqs, seqs.dropFirst()).map { $1 - $0 }.max() ?? UInt64(size))
        let bound = 2 * max(widestGap, min(size, checkpointEvery + 500))
        for target in [1, size / 3, size - 1, size] {
            folds.reset()
            let result = try timeline.bisect { (state: JSONValue) in (state["n"]?.intValue ?? 0) >= Int64(target) }
            #expect(result.seq == UInt64(target))
            #expect(folds.value <= bound, "\(folds.value) actions folded to bisect \(size) actions (bound \(bound), checkpoints at \(seqs))")
        }
    }

    @Test func bisectPassesOverADamagedCheckpoint() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(3_000, every: 1_000, in: directory)
        await store.close()
        // Checkpoints fall on commit boundaries near every 1,000 actions, and at the end (one due
        // while another is being encoded comes later: on a busy machine, with the last).
        let seqs = try store.directory.checkpointHeaders().map(\.seq)
        try #require(seqs.count >= 2 && seqs.last == 3_000, "\(seqs)")
        // A checkpoint whose bytes do not match its hash must never be used.
        var damaged = try #require(try store.directory.checkpoint(at: seqs[1]))
        damaged.stateBytes = Checkpoint(seq: seqs[1], reducer: damaged.reducer, time: damaged.time, state: ["n": 999_999]).stateBytes
        try store.directory.commit(CommitBatch(checkpoints: [damaged]))
        let result = try store.timeline.bisect { (state: JSONValue) in (state["n"]?.intValue ?? 0) >= 2_500 }
        #expect(result.seq == 2_500)
        let report = try store.timeline.verify()
        #expect(report.matched == [seqs[0]])
        #expect(report.mismatch?.seq == seqs[1])
        #expect(report.mismatch?.reason.contains("do not match its own hash") == true)
    }

    @Test func verifyIgnoresOtherReducersCheckpointsAndChainsSegments() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(2_500, every: 1_000, in: directory)
        await store.close()
        try store.directory.commit(CommitBatch(checkpoints: [
            Checkpoint(seq: 1_500, reducer: ReducerIdentity(name: "reel.json", version: "0"), time: .init(nanosecondsSince1970: 0), state: ["n": 0]),
        ]))
        // Near every 1,000 actions and at the end (one due while another is being encoded comes
        // later: on a busy machine, with the last).
        let seqs = try store.directory.checkpointHeaders().filter { $0.reducer.version == "1" }.map(\.seq)
        try #require(seqs.count >= 2 && seqs.last == 2_500, "\(seqs)")
        let whole = try store.timeline.verify()
        #expect(whole.isClean)
        #expect(whole.matched == seqs)
        #expect(whole.skipped.map { $0.seq } == [1_500])
        // Segment by segment, from a verified checkpoint: the same answer.
        let first = try store.timeline.verify(from: 0, through: seqs[0])
        let second = try store.timeline.verify(from: seqs[0], through: 2_500)
        #expect(first.matched + second.matched == whole.matched)
        #expect(throws: StoreError.self) { try store.timeline.verify(from: 1_500, through: 2_500) }
    }

    @Test func importRebuildsALogWithRevertsAndRefusesWhatDoesNotFit() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.counting(10, every: 4, in: directory)
        try await store.dispatch(StoreAction.revert(to: 3).action)
        try await store.dispatch(Action(type: "increment", payload: ["path": "/n"]))
        await store.close()
        let original = try store.timeline.history(limit: 100).actions

        do {
            let importer = try LogImporter(path: directory.sub("copy"), definition: .stock, options: StoreOptions(checkpointEvery: 5))
            for envelope in original { try importer.append(envelope) }
            let done = try importer.finish()
            #expect(done.seq == 12)
            #expect(done.checkpoints == 3)  // at 5, 10 and the end
            #expect(try importer.timeline.state(at: 12) == ["n": 4])
            #expect(try importer.timeline.history(limit: 100).actions == original)
            #expect(try importer.timeline.verify().isClean)
            // The catalog of types, kept from the actions the importer had decoded: each type's
            // first seq, as a scan of the log finds it.
            var firsts: [StoredActionType] = []
            for envelope in original where !firsts.contains(where: { $0.type == envelope.type && $0.version == envelope.version }) {
                firsts.append(StoredActionType(type: envelope.type, version: envelope.version, firstSeq: envelope.seq))
            }
            #expect(try importer.timeline.directory.storedActionTypes() == firsts.sorted())
        }

        let again = #expect(throws: StoreError.self) { try LogImporter(path: directory.sub("copy"), definition: .stock) }
        #expect(again?.message.contains("already holds 12 actions") == true)
        let fresh = try LogImporter(path: directory.sub("other"), definition: .stock)
        let late = #expect(throws: StoreError.self) { try fresh.append(original[4]) }
        #expect(late?.message.contains("needs the whole log from seq 1") == true)
        try fresh.append(original[0])
        let refused = ActionEnvelope(seq: 2, action: Action(type: "increment", payload: ["path": "/missing/n"]), time: original[1].time, peer: original[1].peer)
        let rejection = #expect(throws: StoreError.self) { try fresh.append(refused) }
        #expect(rejection?.code == .rejected)
        #expect(fresh.latestSeq == 1)
    }
}

/// Counts calls of a closure.
final class Counter: @unchecked Sendable {
    // @unchecked: bisect evaluates its condition on the calling thread, one call at a time.
    private(set) var value = 0
    func add() { value += 1 }
}

/// A counter reducers may bump from any thread.
final class SharedCounter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    func reset() { count.withLock { $0 = 0 } }
    var value: Int { count.withLock { $0 } }
}
