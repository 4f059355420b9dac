import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

@Suite(.heavy) struct LMDBWriteTransactionTests {
    struct Rejected: Error, Equatable { let reason: String }

    @Test func putGetDeleteRoundTrip() throws {
        try withTemporaryDirectory { dir in
            // Durability .full here, so the default commit path (with fsync) is exercised too.
            let env = try LMDBEnvironment(path: dir + "/env", options: .init(mapSize: 1 << 20))
            let db = try #require(try env.openDatabase("kv", create: true))

            let stored = try env.write { txn throws in
                try txn.put(bytes("one"), forKey: bytes("a"), in: db)
                try txn.put(bytes("two"), forKey: bytes("b"), in: db)
                try txn.put([UInt8](), forKey: bytes("empty"), in: db)
                // A transaction sees its own uncommitted writes.
                return try txn.get(bytes("a"), in: db)
            }
            #expect(stored == bytes("one"))

            try env.read { txn throws in
                #expect(try txn.get(bytes("a"), in: db) == bytes("one"))
                #expect(try txn.get(bytes("b"), in: db) == bytes("two"))
                #expect(try txn.get(bytes("empty"), in: db) == [])
                #expect(try txn.get(bytes("missing"), in: db) == nil)
                #expect(try txn.contains(bytes("b"), in: db))
                #expect(try !txn.contains(bytes("c"), in: db))
                #expect(try txn.count(in: db) == 3)
                let length = try txn.withValue(forKey: bytes("b"), in: db) { $0.byteCount }
                #expect(length == 3)
                let absent = try txn.withValue(forKey: bytes("zz"), in: db) { _ in Issue.record("called for an absent key") }
                #expect(absent == nil)
            }

            try env.write { txn throws in
                #expect(try txn.delete(bytes("a"), in: db))
                #expect(try !txn.delete(bytes("a"), in: db))
                try txn.put(bytes("TWO"), forKey: bytes("b"), in: db)  // overwrite
            }
            try env.read { txn throws in
                #expect(try txn.get(bytes("a"), in: db) == nil)
                #expect(try txn.get(bytes("b"), in: db) == bytes("TWO"))
                #expect(try txn.count(in: db) == 2)
            }
        }
    }

    @Test func noOverwriteKeepsTheExistingValue() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn throws in
                #expect(try txn.put(bytes("first"), forKey: 7, in: db, noOverwrite: true))
                #expect(try !txn.put(bytes("second"), forKey: 7, in: db, noOverwrite: true))
                // Append + noOverwrite on the last key is "exists", not "out of order".
                #expect(try !txn.put(bytes("third"), forKey: 7, in: db, append: true, noOverwrite: true))
            }
            #expect(try env.read { try $0.get(7, in: db) } == bytes("first"))
        }
    }

    @Test func appendWithOutOfOrderKeysFailsWithKeyExists() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let log = try #require(try env.openDatabase("log", create: true))
            let error = #expect(throws: LMDBError.self) {
                try env.write { txn throws in
                    for seq: UInt64 in [1, 2, 3] {
                        try txn.put(bytes("action \(seq)"), forKey: seq, in: log, append: true)
                    }
                    try txn.put(bytes("late"), forKey: 2, in: log, append: true)
                }
            }
            #expect(error?.code == .keyExists)
            #expect(error?.operation == "mdb_put")
            #expect(error?.detail?.contains("MDB_APPEND") == true)
            // The whole body aborted: not even the in-order appends were committed.
            #expect(try env.read { try $0.count(in: log) } == 0)

            // An equal key is out of order for append as well; a later one is fine.
            let equal = #expect(throws: LMDBError.self) {
                try env.write { txn throws in
                    try txn.put(bytes("a"), forKey: 5, in: log, append: true)
                    try txn.put(bytes("b"), forKey: 5, in: log, append: true)
                }
            }
            #expect(equal?.code == .keyExists)
            try env.write { txn throws in
                try txn.put(bytes("a"), forKey: 5, in: log, append: true)
                try txn.put(bytes("b"), forKey: 6, in: log, append: true)
            }
            #expect(try env.read { try $0.count(in: log) } == 2)
        }
    }

    @Test func aThrowingBodyWritesNothingAndItsErrorComesOutUnchanged() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn in try txn.put(bytes("kept"), forKey: bytes("existing"), in: db) }

            #expect(throws: Rejected(reason: "validation failed")) {
                try env.write { txn throws in
                    try txn.put(bytes("new"), forKey: bytes("added"), in: db)
                    try txn.put(bytes("changed"), forKey: bytes("existing"), in: db)
                    _ = try txn.delete(bytes("existing"), in: db)
                    throw Rejected(reason: "validation failed")
                }
            }
            try env.read { txn throws in
                #expect(try txn.get(bytes("added"), in: db) == nil)
                #expect(try txn.get(bytes("existing"), in: db) == bytes("kept"))
                #expect(try txn.count(in: db) == 1)
            }
        }
    }

    @Test func emptyAndOversizedKeysAreBadValueSize() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            let empty = #expect(throws: LMDBError.self) {
                try env.write { txn in try txn.put(bytes("v"), forKey: [UInt8](), in: db) }
            }
            #expect(empty?.code == .badValueSize)
            let long = #expect(throws: LMDBError.self) {
                try env.write { txn throws in
                    try txn.put(bytes("v"), forKey: [UInt8](repeating: 1, count: env.maxKeySize + 1), in: db)
                }
            }
            #expect(long?.code == .badValueSize)
        }
    }

    @Test func clearEmptiesADatabaseAndKeepsItsHandle() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            try env.write { txn throws in
                for key: UInt64 in 1...100 { try txn.put(bytes("x"), forKey: key, in: db) }
            }
            try env.write { txn in try txn.clear(db) }
            try env.write { txn in try txn.put(bytes("again"), forKey: 1, in: db) }
            try env.read { txn throws in
                #expect(try txn.count(in: db) == 1)
                #expect(try txn.get(1, in: db) == bytes("again"))
            }
        }
    }

    @Test func writersOnSeveralThreadsTakeTurns() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("counter", create: true))
            let problems = Problems()
            // Read-modify-write increments: if two write transactions ever overlapped, some would be lost.
            runOnThreads(4) { _ in
                for _ in 0..<250 {
                    do {
                        try env.write { txn throws in
                            let current = try txn.get(bytes("n"), in: db).map { UInt64($0.count) } ?? 0
                            try txn.put([UInt8](repeating: 0, count: Int(current) + 1), forKey: bytes("n"), in: db)
                        }
                    } catch {
                        problems.record("\(error)")
                    }
                }
            }
            let found = problems.all
            #expect(found.count == 0, "first problems: \(found.prefix(5))")
            #expect(try env.read { try $0.get(bytes("n"), in: db)?.count } == 1000)
        }
    }
}
