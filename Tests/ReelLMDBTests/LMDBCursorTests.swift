import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

@Suite(.heavy) struct LMDBCursorTests {
    /// An environment with keys 10, 20, …, 100 whose values are "v10", "v20", ….
    private func withTens(_ body: (LMDBEnvironment, LMDBDatabase) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let db = try #require(try env.openDatabase("tens", create: true))
            try env.write { txn throws in
                for key in stride(from: UInt64(10), through: 100, by: 10) {
                    try txn.put(bytes("v\(key)"), forKey: key, in: db, append: true)
                }
            }
            try body(env, db)
        }
    }

    @Test func cursorWalksBothWays() throws {
        try withTens { env, db throws in
            try env.read { txn throws in
                try txn.withCursor(in: db) { cursor throws in
                    #expect(cursor.currentKey == nil)  // not positioned yet
                    var forward: [UInt64] = []
                    while try cursor.next() {
                        let key = cursor.currentUInt64Key
                        forward.append(try #require(key))
                    }
                    #expect(forward == Array(stride(from: 10, through: 100, by: 10)))
                    #expect(cursor.currentValue == nil)  // fell off the end

                    #expect(try cursor.last())
                    var backward: [UInt64] = []
                    repeat {
                        let key = cursor.currentUInt64Key
                        backward.append(try #require(key))
                    } while try cursor.previous()
                    #expect(backward == forward.reversed())

                    #expect(try cursor.first())
                    #expect(cursor.currentValue == bytes("v10"))
                    let entry = cursor.withEntry { key, value in (db.decodeUInt64Key(key), copy(value)) }
                    #expect(entry?.0 == 10)
                    #expect(entry?.1 == bytes("v10"))
                }
            }
        }
    }

    @Test func seekFindsTheNearestKeyInEitherDirection() throws {
        try withTens { env, db throws in
            try env.read { txn throws in
                try txn.withCursor(in: db) { cursor throws in
                    #expect(try cursor.seek(atOrAfter: 50))
                    #expect(cursor.currentUInt64Key == 50)
                    #expect(try cursor.seek(atOrAfter: 55))
                    #expect(cursor.currentUInt64Key == 60)
                    #expect(try cursor.next())
                    #expect(cursor.currentUInt64Key == 70)
                    #expect(try !cursor.seek(atOrAfter: 101))
                    #expect(cursor.currentKey == nil)

                    #expect(try cursor.seek(atOrBefore: 50))
                    #expect(cursor.currentUInt64Key == 50)
                    #expect(try cursor.seek(atOrBefore: 55))
                    #expect(cursor.currentUInt64Key == 50)
                    #expect(try cursor.seek(atOrBefore: 1_000))
                    #expect(cursor.currentUInt64Key == 100)
                    #expect(try !cursor.seek(atOrBefore: 9))

                    // Raw byte keys work the same way.
                    #expect(try cursor.seek(atOrAfter: db.encodeUInt64Key(31)))
                    #expect(cursor.currentKey == db.encodeUInt64Key(40))
                    #expect(try cursor.seek(atOrBefore: db.encodeUInt64Key(31)))
                    #expect(cursor.currentKey == db.encodeUInt64Key(30))
                }
            }
        }
    }

    @Test func forEachStartsAnywhereRunsEitherWayAndStopsOnRequest() throws {
        try withTens { env, db throws in
            func walk(from start: UInt64?, reverse: Bool, limit: Int = .max) throws -> [UInt64] {
                var keys: [UInt64] = []
                try env.read { txn throws in
                    let body: (RawSpan, RawSpan) throws -> Bool = { key, value in
                        let decoded = db.decodeUInt64Key(key)
                        let number = try #require(decoded)
                        #expect(copy(value) == bytes("v\(number)"))
                        keys.append(number)
                        return keys.count < limit
                    }
                    if let start {
                        try txn.forEach(in: db, from: start, reverse: reverse, body)
                    } else {
                        try txn.forEach(in: db, reverse: reverse, body)
                    }
                }
                return keys
            }
            #expect(try walk(from: nil, reverse: false) == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
            #expect(try walk(from: nil, reverse: true) == [100, 90, 80, 70, 60, 50, 40, 30, 20, 10])
            #expect(try walk(from: 70, reverse: false) == [70, 80, 90, 100])
            #expect(try walk(from: 65, reverse: false) == [70, 80, 90, 100])
            #expect(try walk(from: 30, reverse: true) == [30, 20, 10])
            #expect(try walk(from: 35, reverse: true) == [30, 20, 10])
            #expect(try walk(from: 500, reverse: true, limit: 2) == [100, 90])
            #expect(try walk(from: 500, reverse: false) == [])
            #expect(try walk(from: 5, reverse: true) == [])
            #expect(try walk(from: nil, reverse: false, limit: 3) == [10, 20, 30])
        }
    }

    @Test func forEachWithByteKeysAndAnEmptyDatabase() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, options: testOptions())
            let names = try #require(try env.openDatabase("names", create: true))
            try env.read { txn throws in
                try txn.forEach(in: names) { _, _ in
                    Issue.record("an empty database has no entries")
                    return true
                }
            }
            try env.write { txn throws in
                for name in ["carol", "alice", "dave", "bob"] { try txn.put(bytes(name.uppercased()), forKey: bytes(name), in: names) }
            }
            var seen: [String] = []
            try env.read { txn throws in
                try txn.forEach(in: names, from: bytes("b"), reverse: false) { key, value in
                    seen.append(String(decoding: copy(key), as: UTF8.self))
                    #expect(copy(value) == copy(key).map { $0 - 32 })  // upper-cased ASCII
                    return true
                }
            }
            #expect(seen == ["bob", "carol", "dave"])
        }
    }

    @Test func writeTransactionsReadTheirOwnWritesThroughCursors() throws {
        try withTens { env, db throws in
            try env.write { txn throws in
                try txn.put(bytes("v5"), forKey: 5, in: db)
                let first = try txn.withCursor(in: db) { cursor throws in
                    try cursor.first() ? cursor.currentUInt64Key : nil
                }
                #expect(first == 5)
                var count = 0
                try txn.forEach(in: db, from: 95, reverse: true) { _, _ in
                    count += 1
                    return true
                }
                #expect(count == 10)  // 90 … 10 and the new 5
            }
        }
    }
}
