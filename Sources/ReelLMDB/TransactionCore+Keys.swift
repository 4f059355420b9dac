import CReelLMDB
#if canImport(FoundationEssentials)
import FoundationEssentials  // ContiguousBytes, without all of Foundation
#else
import Foundation
#endif

// Adapters from the public key types (any `ContiguousBytes`, or a `UInt64` encoded as the database
// does) to the raw-buffer operations of TransactionCore, so each public method is one line.
// `ContiguousBytes.withUnsafeBytes` is untyped `rethrows`; typed results travel through `Result`.
extension TransactionCore {
    @usableFromInline
    func copyValue(forKey key: some ContiguousBytes, in db: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try key.withUnsafeBytes { key in
            Result { () throws(LMDBError) in try lookup(key, in: db).map { Array($0.bytes) } }
        }.get()
    }

    @usableFromInline
    func copyValue(forKey key: UInt64, in db: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try withUnsafeBytes(of: db.encode(key)) { (key) throws(LMDBError) in
            try lookup(key, in: db).map { Array($0.bytes) }
        }
    }

    @usableFromInline
    func contains(_ key: some ContiguousBytes, in db: LMDBDatabase) throws(LMDBError) -> Bool {
        try key.withUnsafeBytes { key in
            Result { () throws(LMDBError) in try lookup(key, in: db) != nil }
        }.get()
    }

    @usableFromInline
    func contains(_ key: UInt64, in db: LMDBDatabase) throws(LMDBError) -> Bool {
        try withUnsafeBytes(of: db.encode(key)) { (key) throws(LMDBError) in try lookup(key, in: db) != nil }
    }

    @usableFromInline
    func withValue<R>(forKey key: some ContiguousBytes, in db: LMDBDatabase,
                      _ body: (RawSpan) throws -> R) throws -> R?
    {
        try key.withUnsafeBytes { key in try withValue(forRawKey: key, in: db, body) }
    }

    @usableFromInline
    func withValue<R>(forKey key: UInt64, in db: LMDBDatabase, _ body: (RawSpan) throws -> R) throws -> R? {
        try withUnsafeBytes(of: db.encode(key)) { key in try withValue(forRawKey: key, in: db, body) }
    }

    @usableFromInline
    func forEach(in db: LMDBDatabase, from start: some ContiguousBytes, reverse: Bool,
                 _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try start.withUnsafeBytes { start in try forEach(in: db, rawStart: start, reverse: reverse, body) }
    }

    @usableFromInline
    func forEach(in db: LMDBDatabase, from start: UInt64, reverse: Bool,
                 _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try withUnsafeBytes(of: db.encode(start)) { start in
            try forEach(in: db, rawStart: start, reverse: reverse, body)
        }
    }

    // MARK: Writing

    func put(_ value: some ContiguousBytes, forKey key: some ContiguousBytes, in db: LMDBDatabase,
             append: Bool, noOverwrite: Bool) throws(LMDBError) -> Bool
    {
        try key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                Result { () throws(LMDBError) in
                    try put(rawValue: value, rawKey: key, in: db, append: append, noOverwrite: noOverwrite)
                }
            }
        }.get()
    }

    func put(_ value: some ContiguousBytes, forKey key: UInt64, in db: LMDBDatabase,
             append: Bool, noOverwrite: Bool) throws(LMDBError) -> Bool
    {
        try withUnsafeBytes(of: db.encode(key)) { key in
            value.withUnsafeBytes { value in
                Result { () throws(LMDBError) in
                    try put(rawValue: value, rawKey: key, in: db, append: append, noOverwrite: noOverwrite)
                }
            }
        }.get()
    }

    func delete(_ key: some ContiguousBytes, in db: LMDBDatabase) throws(LMDBError) -> Bool {
        try key.withUnsafeBytes { key in
            Result { () throws(LMDBError) in try delete(rawKey: key, in: db) }
        }.get()
    }

    func delete(_ key: UInt64, in db: LMDBDatabase) throws(LMDBError) -> Bool {
        try withUnsafeBytes(of: db.encode(key)) { (key) throws(LMDBError) in try delete(rawKey: key, in: db) }
    }

    /// `mdb_put`. `false` only for `noOverwrite` when the key exists; an out-of-order `append`
    /// is an error (LMDB reports both as `MDB_KEYEXIST`; the detail tells them apart).
    func put(rawValue value: UnsafeRawBufferPointer, rawKey key: UnsafeRawBufferPointer, in db: LMDBDatabase,
             append: Bool, noOverwrite: Bool) throws(LMDBError) -> Bool
    {
        enterWrite(db)
        var k = MDB_val(key)
        var v = MDB_val(value)
        var flags: UInt32 = 0
        if append { flags |= UInt32(MDB_APPEND) }
        if noOverwrite { flags |= UInt32(MDB_NOOVERWRITE) }
        let rc = insideLMDB { mdb_put(txn, db.handle, &k, &v, flags) }
        if rc == MDB_SUCCESS { return true }
        if rc == MDB_KEYEXIST {
            // LMDB returns MDB_KEYEXIST here without marking the transaction failed; it stays usable.
            if noOverwrite {
                // With MDB_APPEND the code also means "out of order": only a present key is "exists".
                if !append { return false }
                if try lookup(key, in: db) != nil { return false }
            }
            throw LMDBError(
                code: .keyExists, operation: "mdb_put",
                detail: "MDB_APPEND needs each key to sort after the last key of '\(db.name)'")
        }
        throw writeFailure(rc, "mdb_put")
    }

    /// `mdb_del`: `false` when the key was absent.
    func delete(rawKey key: UnsafeRawBufferPointer, in db: LMDBDatabase) throws(LMDBError) -> Bool {
        enterWrite(db)
        var k = MDB_val(key)
        let rc = insideLMDB { mdb_del(txn, db.handle, &k, nil) }
        if rc == MDB_SUCCESS { return true }
        if rc == MDB_NOTFOUND { return false }
        throw writeFailure(rc, "mdb_del")
    }

    /// `mdb_drop(…, 0)`: removes every entry, keeps the database and its handle.
    func clear(_ db: LMDBDatabase) throws(LMDBError) {
        enterWrite(db)
        let rc = insideLMDB { mdb_drop(txn, db.handle, 0) }
        if rc != MDB_SUCCESS { throw writeFailure(rc, "mdb_drop") }
    }
}
