import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

extension ReelBench {
    /// Durable (fsync'd) commits straight into the log, `perCommit` actions each.
    func durableAppends(perCommit: Int) throws {
        let path = try scratch("append")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = try DataDirectory(path: path, reducerName: "reel.json")
        var seq: UInt64 = 0
        var commits = 0
        let time = Timestamp.now()
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = Duration.zero
        while elapsed < .seconds(appendSeconds) {
            var batch = CommitBatch()
            batch.envelopes.reserveCapacity(perCommit)
            for _ in 0..<perCommit {
                seq += 1
                batch.envelopes.append(ActionEnvelope(
                    seq: seq, action: Self.patchAction(Int(seq)), time: time, peer: .currentProcess
                ))
            }
            try data.commit(batch)
            commits += 1
            elapsed = clock.now - start
        }
        let seconds = elapsed.seconds
        print(String(
            format: "durable appends, %4d actions/commit: %10.0f actions/s  %8.0f commits/s  (%d commits in %.1f s)",
            perCommit, Double(seq) / seconds, Double(commits) / seconds, commits, seconds
        ))
    }

    /// Many tasks dispatching one action at a time through the store: what group commit gives.
    func concurrentDispatch(dispatchers: Int) async throws {
        let path = try scratch("dispatch")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try Store(path: path, definition: .stock, logger: Self.quietLogger)
        let perDispatcher = 200
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for d in 0..<dispatchers {
                group.addTask {
                    for i in 0..<perDispatcher {
                        try await store.dispatch(Self.patchAction(d * perDispatcher + i))
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = (clock.now - start).seconds
        let statistics = store.statistics
        await store.close()
        print(String(
            format: "store dispatch, %d concurrent dispatchers: %10.0f actions/s  (%llu commits, %.1f actions/commit, largest %d)",
            dispatchers, Double(statistics.actionsCommitted) / seconds, statistics.commits,
            Double(statistics.actionsCommitted) / Double(max(statistics.commits, 1)), statistics.largestCommit
        ))
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
