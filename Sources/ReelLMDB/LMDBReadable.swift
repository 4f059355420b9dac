#if canImport(FoundationEssentials)
import FoundationEssentials  // ContiguousBytes, without all of Foundation
#else
import Foundation
#endif

/// What both transaction kinds can do: read. ``LMDBReadTransaction`` and ``LMDBWriteTransaction``
/// conform, so code that only reads can take either:
///
/// ```swift
/// func latestSeq(_ txn: borrowing some LMDBReadable & ~Copyable, _ log: LMDBDatabase) throws -> UInt64 {
///     var latest: UInt64 = 0
///     try txn.forEach(in: log, reverse: true) { key, _ in
///         latest = log.decodeUInt64Key(key) ?? 0
///         return false
///     }
///     return latest
/// }
/// ```
///
/// A write transaction reads its own uncommitted changes, checks every call is on its thread, and
/// traps on a write while bytes it lent (`withValue`, `forEach`, `withCursor`) are still in use.
///
/// Keys are any `ContiguousBytes` (`[UInt8]`, `Data`, `UnsafeRawBufferPointer`, …), or a `UInt64`
/// that is encoded as 8 big-endian bytes (native-endian for ``LMDBDatabase/integerKeys`` databases).
///
/// Only ReelLMDB's transactions conform: the one requirement hands over an
/// ``_LMDBTransactionCore``, which nothing outside the module can create or keep.
public protocol LMDBReadable: ~Copyable {
    /// Lends the transaction's internals to `body`. An implementation detail of the read
    /// operations below; it gives callers outside ReelLMDB nothing they can use.
    func _withTransactionCore<R, E: Error>(_ body: (borrowing _LMDBTransactionCore) throws(E) -> R) throws(E) -> R
}

/// A transaction's internals, lent by ``LMDBReadable/_withTransactionCore(_:)``.
///
/// Opaque outside ReelLMDB: it has no public members or initializer, and, being `~Copyable` and
/// only ever lent `borrowing`, cannot be kept past the transaction (public so that the protocol
/// requirement can name it; Swift has no internal requirements in public protocols).
public struct _LMDBTransactionCore: ~Copyable {
    @usableFromInline let core: TransactionCore

    @usableFromInline init(_ core: TransactionCore) { self.core = core }
}

// Each operation is implemented once, here, on top of TransactionCore, which makes the checks
// (database of this environment; for a write transaction, its thread and no writes while bytes
// are lent). The closure of `_withTransactionCore` is entered once per call, never per entry.
extension LMDBReadable where Self: ~Copyable {
    /// The transaction's core, copied out of the lending closure (fine inside the module, which
    /// never keeps it past the transaction).
    @inlinable @inline(__always)
    var transactionCore: TransactionCore { _withTransactionCore { $0.core } }

    /// The id of the transaction: for a read, the last write transaction committed when it began
    /// (its snapshot); for a write, the id it will have once committed.
    @inlinable
    public var transactionID: Int { transactionCore.transactionID }

    /// A copy of the value stored under `key`.
    /// - Returns: the bytes, or `nil` when the key is absent.
    /// - Throws: ``LMDBError``, e.g. `badValueSize` for an empty or too long key.
    @inlinable
    public func get(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try transactionCore.copyValue(forKey: key, in: database)
    }

    /// A copy of the value stored under the `UInt64` key `key`.
    /// - Returns: the bytes, or `nil` when the key is absent.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    @inlinable
    public func get(_ key: UInt64, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        try transactionCore.copyValue(forKey: key, in: database)
    }

    /// Whether `key` is present.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    @inlinable
    public func contains(_ key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try transactionCore.contains(key, in: database)
    }

    /// Whether the `UInt64` key `key` is present.
    /// - Throws: ``LMDBError`` for failures other than "not found".
    @inlinable
    public func contains(_ key: UInt64, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        try transactionCore.contains(key, in: database)
    }

    /// Lends the value stored under `key` to `body` without copying it.
    /// - Returns: what `body` returns, or `nil` (without calling `body`) when the key is absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    @inlinable
    public func withValue<R>(forKey key: some ContiguousBytes, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try transactionCore.withValue(forKey: key, in: database, body)
    }

    /// Lends the value stored under the `UInt64` key `key` to `body` without copying it.
    /// - Returns: what `body` returns, or `nil` (without calling `body`) when the key is absent.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    @inlinable
    public func withValue<R>(forKey key: UInt64, in database: LMDBDatabase,
                             _ body: (RawSpan) throws -> R) throws -> R?
    {
        try transactionCore.withValue(forKey: key, in: database, body)
    }

    /// The number of entries in `database` (`mdb_stat`; constant time), including a write
    /// transaction's own changes.
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    @inlinable
    public func count(in database: LMDBDatabase) throws(LMDBError) -> Int {
        try transactionCore.stat(database).entries
    }

    /// Statistics of `database` as this transaction sees it.
    /// - Throws: ``LMDBError`` from `mdb_stat`.
    @inlinable
    public func stat(_ database: LMDBDatabase) throws(LMDBError) -> LMDBStat {
        try transactionCore.stat(database)
    }

    /// Calls `body` with every entry in key order (or reverse order) until it returns `false`.
    /// The fast path for scans: one cursor, no allocation per entry.
    /// - Parameters:
    ///   - database: the database to walk.
    ///   - reverse: from the last key down to the first.
    ///   - body: gets each key and value, lent for the call; returns whether to continue.
    /// - Throws: what `body` throws (ending the walk), or an ``LMDBError``.
    @inlinable
    public func forEach(in database: LMDBDatabase, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try transactionCore.forEach(in: database, rawStart: nil, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)``, starting at `start`: at the first key at or after it, or
    /// when `reverse`, at the last key at or before it.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    @inlinable
    public func forEach(in database: LMDBDatabase, from start: some ContiguousBytes, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try transactionCore.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Like ``forEach(in:reverse:_:)``, starting at the `UInt64` key `start` (or the nearest key
    /// after it; before it when `reverse`). Decode keys with ``LMDBDatabase/decodeUInt64Key(_:)``.
    /// - Throws: what `body` throws, or an ``LMDBError``.
    @inlinable
    public func forEach(in database: LMDBDatabase, from start: UInt64, reverse: Bool = false,
                        _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        try transactionCore.forEach(in: database, from: start, reverse: reverse, body)
    }

    /// Opens a cursor on `database` for `body`, closing it afterwards. In a write transaction,
    /// no writes inside `body`.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, or an ``LMDBError`` from opening the cursor.
    @inlinable
    public func withCursor<R>(in database: LMDBDatabase, _ body: (inout LMDBCursor) throws -> R) throws -> R {
        try transactionCore.withCursor(in: database, body)
    }
}
