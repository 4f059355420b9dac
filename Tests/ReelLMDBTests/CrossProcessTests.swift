import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

/// Several processes on one environment. The other process is a child running this same test
/// binary (a swift-testing exit test), because LMDB forbids two handles in one process.
@Suite(.heavy) struct CrossProcessTests {
    private static let entriesPerCommit = 100
    private static let commits = 60
    private static let valueSize = 1_000

    /// A read-only process reads consistent snapshots while this process appends and grows the
    /// map from 64 KiB, so the reader must also adopt the map size (MDB_MAP_RESIZED). The writer
    /// pauses twice, a third and two thirds of the way, until the reader has seen its latest
    /// commit (the reader writes the largest count it saw to a file): at least three distinct
    /// snapshots, however the two processes are scheduled on a busy machine.
    @Test func aReadOnlyProcessReadsWhileAnotherProcessWrites() async throws {
        try await withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir + "/env", options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            let log = try #require(try env.openDatabase("log", create: true))
            let initialMapSize = env.mapSize
            let ready = dir + "/reader-ready"
            let seen = dir + "/reader-seen"

            let writer = Thread {
                // Start writing only once the reader has opened the environment at the small size
                // (or gave up: the child's failure says why).
                try? blockUntil("the reader to open the environment", timeout: .seconds(60)) {
                    FileManager.default.fileExists(atPath: ready)
                }
                var seq: UInt64 = 0
                for commit in 1...Self.commits {
                    _ = try? env.write { txn in
                        for index in 1...UInt64(Self.entriesPerCommit) {
                            try txn.put(patternValue(Int(seq + index), count: Self.valueSize), forKey: seq + index,
                                        in: log, append: true)
                        }
                    }
                    seq += UInt64(Self.entriesPerCommit)
                    if commit == Self.commits / 3 || commit == 2 * Self.commits / 3 {
                        // Until the reader has seen this commit (or gave up: its own deadline).
                        try? blockUntil("the reader to see seq \(seq)", timeout: .seconds(60)) {
                            (try? String(contentsOfFile: seen, encoding: .utf8)).flatMap { UInt64($0) } ?? 0 >= seq
                        }
                    }
                }
            }
            writer.start()

            let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                [dir = dir as String, initialMapSize = initialMapSize as Int] in
                let env = try LMDBEnvironment(path: dir + "/env", options: testOptions(readOnly: true))
                childRequire(env.mapSize == initialMapSize, "opened at \(env.mapSize), expected \(initialMapSize)")
                let log = try #require(try env.openDatabase("log"))
                childRequire(FileManager.default.createFile(atPath: dir + "/reader-ready", contents: nil), "ready file")
                let total = Self.commits * Self.entriesPerCommit
                var counts: Set<Int> = []
                let deadline = Date().addingTimeInterval(60)
                while counts.max() ?? 0 < total {
                    childRequire(Date() < deadline, "saw only \(counts.max() ?? 0) of \(total) entries")
                    let count = try env.read { txn in
                        let count = try txn.count(in: log)
                        childRequire(count % Self.entriesPerCommit == 0, "a partial commit: \(count) entries")
                        var lastKey: UInt64 = 0
                        try txn.forEach(in: log, reverse: true) { key, value in
                            lastKey = log.decodeUInt64Key(key) ?? 0
                            childRequire(copy(value) == patternValue(Int(lastKey), count: Self.valueSize), "bad value")
                            return false
                        }
                        childRequire(lastKey == UInt64(count), "last key \(lastKey) with \(count) entries")
                        return count
                    }
                    if counts.insert(count).inserted, count == counts.max() {
                        childRequire((try? String(count).write(toFile: dir + "/reader-seen", atomically: true, encoding: .utf8)) != nil, "seen file")
                    }
                }
                childRequire(counts.count >= 3, "only \(counts.count) distinct snapshots: no concurrency seen")
                childRequire(env.mapSize > initialMapSize, "the reader never adopted the grown map")
            }
            // Should the child have failed before signalling, release the writer anyway.
            _ = FileManager.default.createFile(atPath: ready, contents: nil)
            try? String(UInt64.max).write(toFile: seen, atomically: true, encoding: .utf8)
            let stderr = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
            #expect(!stderr.contains("child check failed"), "\(stderr)")
            // Wait for the writer, so that it is done with the environment before the checks.
            try await waitUntil("the writer thread to finish", timeout: .seconds(60)) { writer.isFinished }
            #expect(try env.read { try $0.count(in: log) } == Self.commits * Self.entriesPerCommit)
        }
    }

    /// A process killed (here: exiting) inside a read transaction leaves its reader slot behind.
    @Test func staleReaderSlotsOfDeadProcessesAreCleared() async throws {
        try await withTemporaryDirectory { dir in
            // This process keeps the environment open, so the lock file (and its reader table) is not
            // reset when the children come and go.
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn in try txn.put(bytes("v"), forKey: 1, in: db) }

            await #expect(processExitsWith: .success) { [dir = dir as String] in
                let env = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
                try env.read { _ in exit(EXIT_SUCCESS) }  // dies holding a reader slot
            }
            #expect(try env.clearStaleReaders() == 1)
            #expect(try env.clearStaleReaders() == 0)

            await #expect(processExitsWith: .success) { [dir = dir as String] in
                let env = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
                try env.read { _ in exit(EXIT_SUCCESS) }
            }
            // The next process to open the environment clears it at open and says so.
            await #expect(processExitsWith: .exitCode(42)) { [dir = dir as String] in
                let env = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
                exit(env.staleReadersCleared == 1 ? 42 : 1)
            }
            #expect(try env.clearStaleReaders() == 0)
        }
    }
}
