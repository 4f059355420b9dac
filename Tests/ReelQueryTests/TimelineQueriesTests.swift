import ReelCore
import ReelJSON
import ReelProtocol
import ReelQuery
import ReelStore
import ReelTestSupport
import Testing

/// The query layer on a real store: the answers the daemon and `reel --data-dir` both give.
@Suite(.timeLimit(.minutes(1)), .heavy) struct TimelineQueriesTests {
    func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    @Test func everyReadMethodIsAnsweredFromTheTimeline() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions()
        options.checkpointEvery = 2
        let store = try Store(path: dir.path, definition: .stock, options: options)
        for value in 1...5 { try await store.dispatch(set("/n", .int(Int64(value)))) }
        let queries = TimelineQueries(store.timeline)

        #expect(try queries.latestSeq() == 5)
        #expect(try queries.get(GetParams(path: try JSONPointer("/n"), at: 2)) == Snapshot(seq: 2, value: 2))
        #expect(try queries.get(GetParams(path: try JSONPointer("/n"))) == Snapshot(seq: 5, value: 5))
        let page = try queries.history(HistoryParams(from: 2, limit: 2))
        #expect(page.actions.map(\.seq) == [2, 3])
        #expect(page.next == 4)
        #expect(try queries.diff(DiffParams(from: 1, to: 3)).patch.jsonValue == [["op": "replace", "path": "/n", "value": 3]])
        #expect(try queries.replay(ReplayParams(to: 5, skip: [5], path: try JSONPointer("/n"))) == ReplayResult(value: 4))
        let bisect = try queries.bisect(BisectParams(condition: try JSONCondition(parsing: "/n >= 3")))
        #expect(bisect.seq == 3)
        #expect(bisect.through == 5)

        // Checkpoints (and the actions the scan counts) reach LMDB from the journal's applier, a
        // few milliseconds after the dispatches are acknowledged.
        try await waitUntil("the checkpoints and actions in LMDB") {
            (try? queries.checkpoints().checkpoints.count) == 2 && (try? queries.scan().actions) == 5
        }
        // Where they fall depends on the encoder: one asked for while another is being encoded is
        // asked for again at the next dispatch (at 4, or at 5 on a busy machine).
        let checkpoints = try queries.checkpoints()
        let seqs = checkpoints.checkpoints.map(\.seq)
        #expect(seqs.first == 2 && (seqs.last == 4 || seqs.last == 5), "\(seqs)")
        #expect(checkpoints.reducer == store.definition.identity)
        let verify = try queries.verify(VerifyParams())
        #expect(verify.matched == seqs)
        #expect(verify.through == 5)
        #expect(verify.mismatch == nil)
        let scan = try queries.scan()
        #expect(scan.actions == 5)
        #expect(scan.damaged.isEmpty)
        let stats = try queries.stats()
        #expect(stats.seq == 5)
        #expect(stats.checkpoints == 2)
        #expect(stats.lastCheckpointSeq == seqs.last)
        #expect(stats.reducer == "reel.json@1")
        #expect(stats.commits == nil)  // a daemon's counter, not the directory's

        let backup = try queries.backup(BackupParams(path: dir.sub("copy")))
        #expect(backup.seq == 5)
        // A destination in the way is the caller's mistake, not a storage failure.
        #expect(throws: StoreError.self) { try queries.backup(BackupParams(path: dir.sub("copy"))) }
        do {
            _ = try queries.backup(BackupParams(path: dir.sub("copy")))
        } catch {
            #expect(error.code == .invalidArgument)
        }
        await store.close()
    }

    @Test func aSeqBeyondTheLatestIsOutOfRange() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        try await store.dispatch(set("/a", 1))
        let queries = TimelineQueries(store.timeline)
        do {
            _ = try queries.get(GetParams(at: 9))
            Issue.record("a state beyond the latest seq was served")
        } catch {
            #expect(error.code == .seqOutOfRange)
        }
        await store.close()
    }
}
