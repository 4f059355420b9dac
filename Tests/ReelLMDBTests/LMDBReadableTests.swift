import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

/// One function written against `LMDBReadable` serves both transaction kinds.
@Suite(.heavy) struct LMDBReadableTests {
    /// The kind of helper `LMDBReadable` exists for: one body for reads and writes alike.
    private func latestKey(_ txn: borrowing some LMDBReadable & ~Copyable, _ db: LMDBDatabase) throws -> UInt64? {
        var latest: UInt64?
        try txn.forEach(in: db, reverse: true) { key, _ in
            latest = db.decodeUInt64Key(key)
            return false
        }
        return latest
    }

    /// Everything else the protocol offers, through the generic path.
    private func summary(_ txn: borrowing some LMDBReadable & ~Copyable, _ db: LMDBDatabase) throws -> [String] {
        var lines: [String] = []
        lines.append("count \(try txn.count(in: db)) entries \(try txn.stat(db).entries)")
        lines.append("get \(String(decoding: try txn.get(2, in: db) ?? [], as: UTF8.self))")
        lines.append("get bytes \(String(decoding: try txn.get(db.encodeUInt64Key(3), in: db) ?? [], as: UTF8.self))")
        lines.append("contains \(try txn.contains(1, in: db)) \(try txn.contains(db.encodeUInt64Key(9), in: db))")
        let length = try txn.withValue(forKey: 1, in: db) { $0.byteCount }
        let bytesLength = try txn.withValue(forKey: db.encodeUInt64Key(1), in: db) { $0.byteCount }
        lines.append("withValue \(length ?? -1) \(bytesLength ?? -1)")
        var from: [UInt64] = []
        try txn.forEach(in: db, from: 2) { key, _ in
            from.append(db.decodeUInt64Key(key) ?? 0)
            return true
        }
        try txn.forEach(in: db, from: db.encodeUInt64Key(2), reverse: true) { key, _ in
            from.append(db.decodeUInt64Key(key) ?? 0)
            return true
        }
        lines.append("from \(from)")
        let first = try txn.withCursor(in: db) { cursor in try cursor.first() ? cursor.currentUInt64Key : nil }
        lines.append("cursor \(first ?? 0)")
        lines.append("id>0 \(txn.transactionID > 0)")
        return lines
    }

    @Test func oneGenericFunctionReadsBothTransactionKinds() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("log", create: true))
            try env.write { txn throws in
                #expect(try latestKey(txn, db) == nil)
                for key in UInt64(1)...3 { try txn.put(bytes("v\(key)"), forKey: key, in: db, append: true) }
                // The write transaction sees its own uncommitted entries.
                #expect(try latestKey(txn, db) == 3)
            }
            let expected = [
                "count 3 entries 3", "get v2", "get bytes v3", "contains true false", "withValue 2 2",
                "from [2, 3, 2, 1]", "cursor 1", "id>0 true",
            ]
            try env.read { txn throws in
                #expect(try latestKey(txn, db) == 3)
                #expect(try summary(txn, db) == expected)
            }
            try env.write { txn throws in
                #expect(try summary(txn, db) == expected)
                try txn.put(bytes("v4"), forKey: 4, in: db, append: true)
                #expect(try latestKey(txn, db) == 4)
            }
        }
    }

    @Test func transactionIDsMatchAcrossKinds() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("kv", create: true))
            let written = try env.write { txn throws in
                try txn.put(bytes("x"), forKey: 1, in: db)
                return txn.transactionID
            }
            // A read that begins after the commit has that commit as its snapshot.
            #expect(try env.read { txn in txn.transactionID } == written)
        }
    }
}
