import Foundation
import ReelCore
import ReelJSON
import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// A long replay at open says how far it got: a new reducer version finds no checkpoint of its
/// own and replays the whole log, which a daemon reports to systemd (and extends its start timeout).
@Suite(.timeLimit(.minutes(2)), .heavy) struct OpenProgressTests {
    @Test func aReplayAtOpenReportsTheSeqsItReached() async throws {
        let directory = try TemporaryDirectory()
        let count: UInt64 = 140_000
        do {
            let first = try Store(path: directory.path, definition: RecoveryTests.definition(version: "1"))
            let increment = Action(type: "increment", payload: ["path": "/n"])
            for _ in 0..<(count / 1_000) {
                _ = try await first.submit(batch: Array(repeating: increment, count: 1_000)).result()
            }
            await first.close()
        }
        let reports = Mutex<[(UInt64, UInt64)]>([])
        var options = StoreOptions()
        options.openProgressInterval = .zero
        options.openProgress = { reached, latest in reports.withLock { $0.append((reached, latest)) } }
        do {
            let store = try Store(path: directory.path, definition: RecoveryTests.definition(version: "2"), options: options)
            #expect(store.statistics.replayedAtOpen == Int(count))
            #expect(store.snapshot.state == ["n": .int(Int64(count))])
            let reported = reports.withLock { $0 }
            // (The change index, rebuilt for the new version, is built in the background.)
            #expect(reported.map(\.0) == [65_536, 131_072])
            #expect(reported.allSatisfy { $0.1 == count })
            await store.close()
        }

        // Opened again, the new version's checkpoint spares the replay: nothing to report.
        reports.withLock { $0.removeAll() }
        let again = try Store(path: directory.path, definition: RecoveryTests.definition(version: "2"), options: options)
        #expect(again.statistics.replayedAtOpen == 0)
        #expect(reports.withLock { $0.isEmpty })
        await again.close()
    }
}
