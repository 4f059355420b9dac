import CReelLMDB
#if canImport(FoundationEssentials)
import FoundationEssentials  // ContiguousBytes, without all of Foundation
#else
import Foundation
#endif

/// A position in one database, for walking entries in key order from inside a transaction.
///
/// Obtained only from `withCursor(in:_:)` as an `inout` parameter, so it cannot outlive the
/// closure, and the compiler rejects moving it while ``withEntry(_:)`` is reading the current entry.
/// A move returns `false` when there is no such entry; the position is then unspecified until the
/// next successful move. On a fresh cursor, ``next()`` starts at the first entry and ``previous()``
/// at the last, so `while try cursor.next() { ... }` visits everything.
///
/// ```swift
/// try env.read { txn in
///     try txn.withCursor(in: log) { cursor in
///         guard try cursor.seek(atOrAfter: 1_000) else { return }
///         repeat {
///             cursor.withEntry { key, value in apply(value) }
///         } while try cursor.next()
///     }
/// }
/// ```
public struct LMDBCursor: ~Copyable {
    let handle: OpaquePointer
    @usableFromInline let core: TransactionCore
    /// The database this cursor walks.
    public let database: LMDBDatabase
    // Internal rather than private so that withEntry can be inlined (and specialized) into callers.
    @usableFromInline var key = MDB_val()
    @usableFromInline var value = MDB_val()
    @usableFromInline var positioned = false

    init(handle: OpaquePointer, core: TransactionCore, database: LMDBDatabase) {
        self.handle = handle
        self.core = core
        self.database = database
    }

    /// Moves to the first entry. - Returns: `false` if the database is empty.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func first() throws(LMDBError) -> Bool { try move(MDB_FIRST) }

    /// Moves to the last entry. - Returns: `false` if the database is empty.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func last() throws(LMDBError) -> Bool { try move(MDB_LAST) }

    /// Moves to the following entry (the first, on a fresh cursor). - Returns: `false` past the end.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func next() throws(LMDBError) -> Bool { try move(MDB_NEXT) }

    /// Moves to the preceding entry (the last, on a fresh cursor). - Returns: `false` before the start.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func previous() throws(LMDBError) -> Bool { try move(MDB_PREV) }

    /// Moves to the first entry whose key is equal to or after `target` (`MDB_SET_RANGE`).
    /// - Returns: `false` if every key is before `target`.
    /// - Throws: ``LMDBError``, e.g. `badValueSize` for an empty or too long key.
    public mutating func seek(atOrAfter target: some ContiguousBytes) throws(LMDBError) -> Bool {
        try seek(to: target, backward: false)
    }

    /// Moves to the first entry whose `UInt64` key is `target` or later (encoded as the database does).
    /// - Returns: `false` if every key is before `target`.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func seek(atOrAfter target: UInt64) throws(LMDBError) -> Bool {
        try seek(to: target, backward: false)
    }

    /// Moves to the last entry whose key is equal to or before `target`: for example the newest
    /// checkpoint at or before a sequence number.
    /// - Returns: `false` if every key is after `target`.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func seek(atOrBefore target: some ContiguousBytes) throws(LMDBError) -> Bool {
        try seek(to: target, backward: true)
    }

    /// Moves to the last entry whose `UInt64` key is `target` or earlier.
    /// - Returns: `false` if every key is after `target`.
    /// - Throws: ``LMDBError`` for failures other than "no entry".
    public mutating func seek(atOrBefore target: UInt64) throws(LMDBError) -> Bool {
        try seek(to: target, backward: true)
    }

    /// Passes the current entry's bytes to `body`. They point into the memory map: copy what you
    /// keep. The spans cannot leave the closure.
    /// - Returns: what `body` returns, or `nil` when the cursor is not on an entry.
    @inlinable
    public func withEntry<R>(_ body: (_ key: RawSpan, _ value: RawSpan) throws -> R) rethrows -> R? {
        guard positioned else { return nil }
        core.checkThread()
        let keyBytes = key.bytes
        let valueBytes = value.bytes
        return try body(RawSpan(_unsafeBytes: keyBytes), RawSpan(_unsafeBytes: valueBytes))
    }

    /// A copy of the current key, or `nil` when the cursor is not on an entry.
    public var currentKey: [UInt8]? {
        guard positioned else { return nil }
        core.checkThread()
        return Array(key.bytes)
    }

    /// A copy of the current value, or `nil` when the cursor is not on an entry.
    public var currentValue: [UInt8]? {
        guard positioned else { return nil }
        core.checkThread()
        return Array(value.bytes)
    }

    /// The current key decoded as a `UInt64` key of ``database``, or `nil` when the cursor is not on
    /// an entry or the key is not 8 bytes long.
    public var currentUInt64Key: UInt64? {
        guard positioned else { return nil }
        core.checkThread()
        return database.decodeUInt64Key(key.bytes)
    }

    private mutating func move(_ op: MDB_cursor_op) throws(LMDBError) -> Bool {
        core.checkThread()
        positioned = try core.move(handle, op, &key, &value)
        return positioned
    }

    private mutating func seek(to target: some ContiguousBytes, backward: Bool) throws(LMDBError) -> Bool {
        let result = target.withUnsafeBytes { target in
            Result { () throws(LMDBError) in try seek(rawTarget: target, backward: backward) }
        }
        return try result.get()
    }

    private mutating func seek(to target: UInt64, backward: Bool) throws(LMDBError) -> Bool {
        try withUnsafeBytes(of: database.encode(target)) { (target) throws(LMDBError) in
            try seek(rawTarget: target, backward: backward)
        }
    }

    private mutating func seek(rawTarget target: UnsafeRawBufferPointer, backward: Bool) throws(LMDBError) -> Bool {
        core.checkThread()
        positioned = try core.seek(handle, to: target, backward: backward, in: database, &key, &value)
        return positioned
    }
}
