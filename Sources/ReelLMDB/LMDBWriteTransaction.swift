import CReelLMDB
#if canImport(FoundationEssentials)
import FoundationEssentials  // ContiguousBytes, without all of Foundation
#else
import Foundation
#endif

/// The environment's write transaction, lent to the closure of ``LMDBEnvironment/write(_:)``,
/// which commits it when the closure returns and aborts it when the closure throws.
///
/// `~Copyable` and passed `borrowing`: it cannot be stored, copied, committed twice or used after
/// the closure. Every operation checks that it runs on the thread that began the transaction
/// (LMDB's writer lock belongs to that thread) and traps otherwise.
///
/// It reads like ``LMDBReadTransaction``, seeing its own uncommitted writes. One rule on top:
/// no writes while value bytes of this transaction are lent out (inside `withValue`, `forEach`
/// or `withCursor`), because a write can move the pages those bytes live in. That traps too;
/// collect keys first, then write.
public struct LMDBWriteTransaction: ~Copyable {
    let core: TransactionCore

    init(_ core: TransactionCore) { self.core = core }

    /// The id this transaction will have once committed.
    public var transactionID: Int {
        core.checkThread()
        return Int(mdb_txn_id(core.txn))
    }

    // MARK: Writing

    /// Stores `value` under `key`, replacing any value already there unless `noOverwrite`.
    /// - Parameters:
    ///   - append: `MDB_APPEND`: the key must sort after every key in the database; faster and
    ///     packs pages fully. Throws `keyExists` (with a detail saying so) when it does not.
    ///   - noOverwrite: `MDB_NOOVERWRITE`: keep an existing value and return `false`.
    /// - Returns: `false` if `noOverwrite` found the key present, `true` when stored.
    /// - Throws: ``LMDBError``: `keyExists` for an out-of-order append, `badValueSize` for an empty
    ///   or too long key, `mapFull` only when the map cannot grow further (otherwise the body is re-run).
    @discardableResult
    public func put(_ value: some ContiguousBytes, forKey key: some ContiguousBytes, in database: LMDBDatabase,
                    append: Bool = false, noOverwrite: Bool = false) throws(LMDBError) -> Bool
    {
        try core.put(value, forKey: key, in: database, append: append, noOverwrite: noOverwrite)
    }

    /// Stores `value` under the `UInt64` key `key` (8 big-endian bytes, or native-endian for
    /// ``LMDBDatabase/integerKeys`` databases): the log's sequence numbers, appended in order with
    /// `append: true`.
    /// - Returns: `false` if `noOverwrite` found the key present, `true` when stored.
    /// - Throws: ``LMDBError``, as for byte keys: `keyExists` for an out-of-order append.
    @discardableResult
    public func put(_ value: some ContiguousBytes, forKey key: UInt64, in database: LMDBDatabase,
                    append: Bool = false, noOverwrite: Bool = false) throws(LMDBError) -> Bool
    {
        try core.put(value, forKey: key, in: database, append: append, noOverwrite: noOverwrite)
    }

    /// Removes `key` and its value.
    /// - Returns: `false` if the key was absent.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    @discardableResult
    public func delete(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try core.delete(key, in: database)
    }

    /// Removes the `UInt64` key `key` and its value.
    /// - Returns: `false` if the key was absent.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    @discardableResult
    public func delete(_ key: UInt64, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try core.delete(key, in: database)
    }

    /// Removes every entry of `database`; the database and its handle stay valid.
    /// - Throws: ``LMDBError`` from `mdb_drop`.
    public func clear(_ database: LMDBDatabase) throws(LMDBError) {
        try core.clear(database)
    }

    // MARK: Reading (as in LMDBReadTransaction)

    /// A copy of the value stored under `key`, or `nil` when absent.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    public func get(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try core.copyValue(forKey: key, in: database)
    }

    /// A copy of the value stored under the `UInt64` key `key`, or `nil` when absent.
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

    /// Lends the value stored under `key` to `body`; `nil` without calling it when absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func withValue<R>(forKey key: some ContiguousBytes, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try core.withValue(forKey: key, in: database, body)
    }

    /// Lends the value stored under the `UInt64` key `key` to `body`; `nil` when absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func withValue<R>(forKey key: UInt64, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try core.withValue(forKey: key, in: database, body)
    }

    /// The number of entries in `database`, including this transaction's changes.
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    public func count(in database: LMDBDatabase) throws(LMDBError) -> Int {
        try core.stat(database).entries
    }

    /// Statistics of `database`, including this transaction's changes.
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    public func stat(_ database: LMDBDatabase) throws(LMDBError) -> LMDBStat {
        try core.stat(database)
    }

    /// Calls `body` with every entry in key order (or reverse) until it returns `false`.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, rawStart: nil, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)`` from the first key at or after `start` (at or before, when `reverse`).
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, from start: some ContiguousBytes, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)`` from the `UInt64` key `start` (or the nearest key in the walk's direction).
    /// - Throws: what `body` throws, or an ``LMDBError``.
    public func forEach(in database: LMDBDatabase, from start: UInt64, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try core.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Opens a cursor on `database` for `body`, closing it afterwards. No writes inside `body`.
    /// - Throws: what `body` throws, or an ``LMDBError`` from opening the cursor.
    public func withCursor<R>(in database: LMDBDatabase, _ body: (inout LMDBCursor) throws -> R) throws -> R {
        try core.withCursor(in: database, body)
    }
}
