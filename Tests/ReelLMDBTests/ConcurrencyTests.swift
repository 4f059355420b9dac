import Foundation
import ReelLMDB
import ReelTestSupport
import Synchronization
import Testing

@Suite(.heavy) struct ConcurrencyTests {
    /// Readers on their own threads, while a writer commits, always see whole commits: the
    /// counter in `meta` equals the number of log entries, and the last entry is the counter's.
    @Test func readersOnSeveralThreadsSeeConsistentSnapshotsWhileAWriterCommits() throws {
        try withTemporaryDirectory { dir in
            // A small map, so that the writer also grows it (a remap) while readers are active.
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            let log = try #require(try env.openDatabase("log", create: true))
            let meta = try #require(try env.openDatabase("meta", create: true))
            let commits = 400
            let readers = 3
            let problems = Problems()
            let readersStarted = Atomic<Int>(0)
            let writerDone = Atomic<Bool>(false)
            let snapshotsSeen = Mutex<[Set<UInt64>]>(Array(repeating: [], count: readers))

            runOnThreads(readers + 1) { thread in
                if thread == readers {
                    // The writer starts only after every reader has taken a first (empty) snapshot.
                    while readersStarted.load(ordering: .acquiring) < readers { sched_yield() }
                    for seq in 1...UInt64(commits) {
                        do {
                            try env.write { txn in
                                for part in 0..<10 {
                                    try txn.put(patternValue(Int(seq) * 10 + part, count: 200),
                                                forKey: (seq - 1) * 10 + UInt64(part) + 1, in: log, append: true)
                                }
                                try txn.put(withUnsafeBytes(of: seq) { Array($0) }, forKey: bytes("seq"), in: meta)
                            }
                        } catch {
                            problems.record("write \(seq): \(error)")
                        }
                    }
                    writerDone.store(true, ordering: .releasing)
                    return
                }
                var last: UInt64 = 0
                var first = true
                while true {
                    let finished = writerDone.load(ordering: .acquiring)
                    do {
                        let seq = try env.read { txn in
                            let seq = try txn.get(bytes("seq"), in: meta).map { $0.withUnsafeBytes { $0.load(as: UInt64.self) } } ?? 0
                            let count = try txn.count(in: log)
                            if count != Int(seq) * 10 { problems.record("seq \(seq) but \(count) log entries") }
                            var lastKey: UInt64 = 0
                            try txn.forEach(in: log, reverse: true) { key, value in
                                lastKey = log.decodeUInt64Key(key) ?? .max
                                let owner = Int((lastKey - 1) / 10 + 1) * 10 + Int((lastKey - 1) % 10)
                                if copy(value) != patternValue(owner, count: 200) { problems.record("bad value at \(lastKey)") }
                                return false
                            }
                            if lastKey != seq * 10 { problems.record("seq \(seq) but last key \(lastKey)") }
                            return seq
                        }
                        if seq < last { problems.record("went back in time from \(last) to \(seq)") }
                        last = seq
                        snapshotsSeen.withLock { _ = $0[thread].insert(seq) }
                    } catch {
                        problems.record("read: \(error)")
                    }
                    if first {
                        first = false
                        readersStarted.add(1, ordering: .releasing)
                    }
                    if finished { break }
                }
            }

            let found = problems.all
            #expect(found.count == 0, "first problems: \(found.prefix(5))")
            for seen in snapshotsSeen.withLock({ $0 }) {
                // Each reader saw the empty start and the final state, and so at least two snapshots.
                #expect(seen.contains(0))
                #expect(seen.contains(UInt64(commits)))
            }
            #expect(env.mapSize > 64 << 10)
        }
    }

    @Test func aReadTransactionKeepsItsSnapshotWhileAnotherThreadCommits() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn in try txn.put(bytes("old"), forKey: bytes("k"), in: db) }
            try env.read { txn throws in
                let before = txn.transactionID
                runOnThreads(1) { _ in
                    _ = try? env.write { txn in try txn.put(bytes("new"), forKey: bytes("k"), in: db) }
                }
                #expect(try txn.get(bytes("k"), in: db) == bytes("old"))
                #expect(txn.transactionID == before)
                // A new read on this same thread (MDB_NOTLS allows several) sees the commit.
                #expect(try env.read { try $0.get(bytes("k"), in: db) } == bytes("new"))
            }
        }
    }

    @Test func readTransactionsWorkFromSwiftConcurrencyTasks() async throws {
        try await withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn in
                for key: UInt64 in 1...100 { try txn.put(bytes("\(key)"), forKey: key, in: db) }
            }
            let total = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<16 {
                    group.addTask {
                        try env.read { txn in try txn.get(UInt64(task % 100 + 1), in: db)?.count ?? 0 }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(total == (0..<16).reduce(0) { $0 + "\($1 % 100 + 1)".utf8.count })
        }
    }
}
