import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

@Suite(.heavy) struct LMDBDatabaseTests {
    @Test func namedDatabasesAreSeparateAndPersist() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try LMDBEnvironment(path: dir, options: testOptions())
                #expect(try env.openDatabase("log") == nil)  // absent and not created
                let log = try #require(try env.openDatabase("log", create: true))
                let meta = try #require(try env.openDatabase("meta", create: true))
                #expect(log != meta)
                #expect(try env.openDatabase("log") == log)  // the same handle again
                #expect(log.name == "log")
                try env.write { txn throws in
                    try txn.put(bytes("in log"), forKey: bytes("k"), in: log)
                    try txn.put(bytes("in meta"), forKey: bytes("k"), in: meta)
                }
                try env.read { txn throws in
                    #expect(try txn.get(bytes("k"), in: log) == bytes("in log"))
                    #expect(try txn.get(bytes("k"), in: meta) == bytes("in meta"))
                }
                try env.sync()
            }
            // Reopened (the first instance is gone): both databases and their contents are there.
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let log = try #require(try env.openDatabase("log"))
            let meta = try #require(try env.openDatabase("meta"))
            #expect(try env.openDatabase("checkpoints") == nil)
            try env.read { txn throws in
                #expect(try txn.get(bytes("k"), in: log) == bytes("in log"))
                #expect(try txn.get(bytes("k"), in: meta) == bytes("in meta"))
            }
        }
    }

    @Test func tooManyDatabasesIsDatabasesFull() throws {
        try withTemporaryDirectory { dir in
            var options = testOptions()
            options.maxDatabases = 2
            let env = try LMDBEnvironment(path: dir, options: options)
            _ = try env.openDatabase("a", create: true)
            _ = try env.openDatabase("b", create: true)
            let error = #expect(throws: LMDBError.self) { try env.openDatabase("c", create: true) }
            #expect(error?.code == .databasesFull)
        }
    }

    @Test func bigEndianUInt64KeysSortNumerically() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let log = try #require(try env.openDatabase("log", create: true))
            #expect(!log.integerKeys)
            #expect(log.encodeUInt64Key(0x0102) == [0, 0, 0, 0, 0, 0, 1, 2])
            let keys: [UInt64] = [300, 1, 256, 2, 65_536, UInt64.max]
            try env.write { txn throws in
                for key in keys { try txn.put(bytes("\(key)"), forKey: key, in: log) }
            }
            var seen: [UInt64] = []
            try env.read { txn throws in
                try txn.forEach(in: log) { key, value in
                    let decoded = log.decodeUInt64Key(key)
                    let number = try #require(decoded)
                    #expect(copy(value) == bytes("\(number)"))
                    seen.append(number)
                    return true
                }
            }
            #expect(seen == keys.sorted())
        }
    }

    @Test func integerKeyDatabasesUseNativeOrderAndKeepTheirFlag() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try LMDBEnvironment(path: dir, options: testOptions())
                let numbers = try #require(try env.openDatabase("numbers", create: true, integerKeys: true))
                #expect(numbers.integerKeys)
                #expect(numbers.encodeUInt64Key(1) == withUnsafeBytes(of: UInt64(1)) { Array($0) })
                try env.write { txn throws in
                    for key: UInt64 in [1_000_000, 3, 70_000, 42] { try txn.put(bytes("v"), forKey: key, in: numbers) }
                }
            }
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            // Opened without asking for integer keys: the flag recorded in the file wins.
            let numbers = try #require(try env.openDatabase("numbers"))
            #expect(numbers.integerKeys)
            var seen: [UInt64] = []
            try env.read { txn throws in
                try txn.forEach(in: numbers) { key, _ in
                    let decoded = numbers.decodeUInt64Key(key)
                    seen.append(try #require(decoded))
                    return true
                }
                #expect(try txn.get(70_000, in: numbers) == bytes("v"))
            }
            #expect(seen == [3, 42, 70_000, 1_000_000])
        }
    }

    @Test func statCountsEntries() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn throws in
                for key: UInt64 in 1...1_000 { try txn.put(patternValue(Int(key), count: 100), forKey: key, in: db) }
                #expect(try txn.count(in: db) == 1_000)
            }
            let stat = try env.stat(db)
            #expect(stat.entries == 1_000)
            #expect(stat.leafPages > 1)
            #expect(stat.depth >= 2)
            #expect(stat.pageSize >= 4096)
        }
    }
}
