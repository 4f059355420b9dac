import Foundation
import ReelLMDB
import ReelTestSupport
import Synchronization
import Testing

@Suite(.heavy) struct MapGrowthTests {
    private static let valueSize = 1_000

    @Test func aTinyMapGrowsToHoldTwentyMegabytes() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            #expect(env.mapSize == 64 << 10)
            let blobs = try #require(try env.openDatabase("blobs", create: true))

            // 10 MB in 100 small transactions …
            for batch in 0..<100 {
                try env.write { txn throws in
                    for index in batch * 100 ..< batch * 100 + 100 {
                        try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs, append: true)
                    }
                }
            }
            // … and 10 MB in one, which must be re-run from the start after each growth.
            var runs = 0
            try env.write { txn throws in
                runs += 1
                for index in 10_000 ..< 20_000 {
                    try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs, append: true)
                }
            }
            #expect(runs > 1)
            #expect(env.mapSize >= 20_000 * Self.valueSize)
            #expect(env.info.mapSize == env.mapSize)

            var checked = 0
            try env.read { txn throws in
                #expect(try txn.count(in: blobs) == 20_000)
                try txn.forEach(in: blobs) { key, value in
                    let index = Int(blobs.decodeUInt64Key(key) ?? .max)
                    if index != checked || copy(value) != patternValue(index, count: Self.valueSize) {
                        Issue.record("entry \(checked) is wrong (key \(index))")
                        return false
                    }
                    checked += 1
                    return true
                }
            }
            #expect(checked == 20_000)
        }
    }

    @Test func aBodyThatSwallowsMapFullIsStillRerun() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            let blobs = try #require(try env.openDatabase("blobs", create: true))
            var runs = 0
            try env.write { txn throws in
                runs += 1
                for index in 0..<1_000 {
                    // Ignoring errors is a bug in the body, but must not lose or half-commit data.
                    _ = try? txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                }
            }
            #expect(runs > 1)
            try env.read { txn throws in
                #expect(try txn.count(in: blobs) == 1_000)
                #expect(try txn.get(999, in: blobs) == patternValue(999, count: Self.valueSize))
            }
        }
    }

    @Test func growthStopsAtMaxMapSizeWithAClearError() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 256 << 10))
            let blobs = try #require(try env.openDatabase("blobs", create: true))
            try env.write { txn in try txn.put(bytes("small"), forKey: 0, in: blobs) }

            let error = #expect(throws: LMDBError.self) {
                try env.write { txn in
                    for index in 1...1_000 {
                        try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                    }
                }
            }
            #expect(error?.code == .mapFull)
            #expect(error?.detail?.contains("maxMapSize") == true)
            #expect(env.mapSize == 256 << 10)
            // Nothing of the failed transaction is there; the environment still works.
            try env.write { txn in try txn.put(bytes("after"), forKey: 1, in: blobs) }
            try env.read { txn throws in
                #expect(try txn.count(in: blobs) == 2)
                #expect(try txn.get(0, in: blobs) == bytes("small"))
            }
        }
    }

    @Test func growingInsideAReadOfTheSameThreadFailsInsteadOfDeadlocking() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            let blobs = try #require(try env.openDatabase("blobs", create: true))
            let error = #expect(throws: LMDBError.self) {
                try env.read { _ in
                    try env.write { txn in
                        for index in 0..<1_000 {
                            try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                        }
                    }
                }
            }
            #expect(error?.code == .mapFull)
            #expect(error?.detail?.contains("another transaction of this environment open") == true)
            // Outside the read, the same write grows the map and succeeds.
            try env.write { txn in
                for index in 0..<1_000 {
                    try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                }
            }
            #expect(try env.read { try $0.count(in: blobs) } == 1_000)
        }
    }

    /// A growth waits for every open transaction of the process; meanwhile the reader it waits for
    /// must still be able to open a nested read (a writer-preferring lock would deadlock here).
    @Test func growthWaitsForReadersWhoCanStillNestReads() async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                [dir = dir as String] in
                // A deadline, not a wait for anything: a deadlock (what this test would catch) ends
                // the child with a failure instead of hanging it.
                Thread.detachNewThread {
                    sleep(30)
                    childRequire(false, "deadlocked")
                }
                let env = try! LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
                let blobs = try! env.openDatabase("blobs", create: true)!
                let readOpen = DispatchSemaphore(value: 0)
                let writerDone = Atomic<Bool>(false)
                runOnThreads(2) { index in
                    if index == 0 {
                        try! env.read { _ in
                            readOpen.signal()
                            // Until the writer has filled the map and its growth waits for this reader.
                            childRequire((try? blockUntil("the growth to wait", timeout: .seconds(30)) { env.isGrowthWaiting }) != nil, "the growth never waited")
                            childRequire(!writerDone.load(ordering: .acquiring), "the growth did not wait for the reader")
                            try env.read { txn in _ = try txn.count(in: blobs) }
                        }
                    } else {
                        readOpen.wait()
                        try! env.write { txn in
                            for index in 0..<1_000 {
                                try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                            }
                        }
                        writerDone.store(true, ordering: .releasing)
                    }
                }
                childRequire(env.mapSize > 64 << 10, "the map did not grow")
                childRequire(try! env.read { try $0.count(in: blobs) } == 1_000, "entries missing")
            }
            let stderr = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
            #expect(!stderr.contains("child check failed"), "\(stderr)")
        }
    }

    @Test func reopeningKeepsAMapOthersHaveGrown() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
                let blobs = try #require(try env.openDatabase("blobs", create: true))
                try env.write { txn in
                    for index in 0..<2_000 {
                        try txn.put(patternValue(index, count: Self.valueSize), forKey: UInt64(index), in: blobs)
                    }
                }
                #expect(env.mapSize > 2_000 * Self.valueSize)
            }
            // A smaller configured size must not shrink the map below what the file records.
            let env = try LMDBEnvironment(path: dir, options: testOptions(mapSize: 64 << 10, maxMapSize: 1 << 30))
            #expect(env.mapSize > 2_000 * Self.valueSize)
            let blobs = try #require(try env.openDatabase("blobs"))
            #expect(try env.read { try $0.count(in: blobs) } == 2_000)
        }
    }
}
