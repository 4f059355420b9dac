import CReelLMDB
#if canImport(FoundationEssentials)
import FoundationEssentials  // ContiguousBytes, without all of Foundation
#else
import Foundation
#endif

/// A read-only snapshot of an environment, lent to the closure of ``LMDBEnvironment/read(_:)``.
///
/// `~Copyable` and passed `borrowing`: it cannot be stored, copied or used after the closure
/// returns. Values come either as copies (`get`) or as `RawSpan`s lent to a closure
/// (`withValue`, `forEach`, cursors); a span points into the memory map and is non-escapable,
/// so its bytes cannot be kept past the transaction either.
///
/// Keys are any `ContiguousBytes` (`[UInt8]`, `Data`, `UnsafeRawBufferPointer`, …), or a `UInt64`
/// that is encoded as 8 big-endian bytes (native-endian for ``LMDBDatabase/integerKeys`` databases).
public struct LMDBReadTransaction: ~Copyable {
    let core: TransactionCore

    init(_ core: TransactionCore) { self.core = core }

    /// The id of the snapshot: the last write transaction committed when this one began.
    public var transactionID: Int { Int(mdb_txn_id(core.txn)) }

    /// A copy of the value stored under `key`.
    /// - Returns: the bytes, or `nil` when the key is absent.
    /// - Throws: ``LMDBError``, e.g. `badValueSize` for an empty or too long key.
    public func get(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try core.copyValue(forKey: key, in: database)
    }

    /// A copy of the value stored under the `UInt64` key `key`.
    /// - Returns: the bytes, or `nil` when the key is absent.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    public func get(_ key: UInt64, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try core.copyValue(forKey: key, in: database)
    }

    /// Whether `key` is present.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    public func contains(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try core.contains(key, in: database)
    }

    /// Whether the `UInt64` key `key` is present.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    public func contains(_ key: UInt64, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try core.contains(key, in: database)
    }

    /// Lends the value stored under `key` to `body` without copying it.
    /// - Returns: what `body` returns, or `nil` (without calling `body`) when the key is absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func withValue<R>(forKey key: some ContiguousBytes, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try core.withValue(forKey: key, in: database, body)
    }

    /// Lends the value stored under the `UInt64` key `key` to `body` without copying it.
    /// - Returns: what `body` returns, or `nil` (without calling `body`) when the key is absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func withValue<R>(forKey key: UInt64, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try core.withValue(forKey: key, in: database, body)
    }

    /// The number of entries in `database` (`mdb_stat`; constant time).
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    public func count(in database: LMDBDatabase) throws(LMDBError) -> Int {
        try core.stat(database).entries
    }

    /// Statistics of `database` in this snapshot.
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    public func stat(_ database: LMDBDatabase) throws(LMDBError) -> LMDBStat {
        try core.stat(database)
    }

    /// Calls `body` with every entry in key order (or reverse order) until it returns `false`.
    /// The fast path for scans: one cursor, no allocation per entry.
    /// - Parameters:
    ///   - database: the database to walk.
    ///   - reverse: from the last key down to the first.
    ///   - body: gets each key and value, lent for the call; returns whether to continue.
    /// - Throws: what `body` throws (ending the walk), or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, rawStart: nil, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)``, starting at `start`: at the first key at or after it, or
    /// when `reverse`, at the last key at or before it.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, from start: some ContiguousBytes, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)``, starting at the `UInt64` key `start` (or the nearest key
    /// after it; before it when `reverse`). Decode keys with ``LMDBDatabase/decodeUInt64Key(_:)``.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, from start: UInt64, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Opens a cursor on `database` for `body`, closing it afterwards.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, or an ``LMDBError`` from opening the cursor.
    public func withCursor<R>(in database: LMDBDatabase, _ body: (inout LMDBCursor) throws -> R) throws -> R {
        try core.withCursor(in: database, body)
    }
}
