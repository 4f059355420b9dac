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
/// It reads like ``LMDBReadTransaction`` (the operations of ``LMDBReadable``), seeing its own
/// uncommitted writes. One rule on top: no writes while value bytes of this transaction are lent
/// out (inside `withValue`, `forEach` or `withCursor`), because a write can move the pages those
/// bytes live in. That traps too; collect keys first, then write.
public struct LMDBWriteTransaction: ~Copyable {
    @usableFromInline let core: TransactionCore

    init(_ core: TransactionCore) { self.core = core }

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
}

extension LMDBWriteTransaction: LMDBReadable {
    /// Lends the transaction's internals to ReelLMDB's read operations; see ``LMDBReadable``.
    /// The thread and borrow checks travel with them: every operation still makes them.
    @inlinable
    public func _withTransactionCore<R, E: Error>(
        _ body: (borrowing _LMDBTransactionCore) throws(E) -> R
    ) throws(E) -> R {
        try body(_LMDBTransactionCore(core))
    }
}
