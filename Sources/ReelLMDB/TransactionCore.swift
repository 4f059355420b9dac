import CReelFaultGuard
import CReelLMDB

/// The operations both transaction kinds share, on the raw `MDB_txn`.
///
/// ``LMDBReadTransaction`` and ``LMDBWriteTransaction`` are thin `~Copyable` shells around this
/// (their reads written once, in ``LMDBReadable``), so that the checks live in one place: the
/// database belongs to this environment, and for a write transaction, the call is on the thread
/// that began it.
@usableFromInline
struct TransactionCore {
    let txn: OpaquePointer
    let environmentID: UInt64
    /// Present for write transactions: the thread check, the map-full flag, the borrow depth.
    let write: UnsafeMutablePointer<WriteState>?
    /// Present for read transactions: where every key and value LMDB returns must lie. (A write
    /// transaction's own changes live in memory outside the map.)
    let map: MapBounds?

    /// Checks every operation makes before touching LMDB.
    @inline(__always)
    func enter(_ db: LMDBDatabase) {
        lmdbPrecondition(db.environmentID == environmentID,
                     "LMDBDatabase '\(db.name)' belongs to another LMDBEnvironment")
        checkThread()
    }

    /// A write transaction must stay on the thread that began it: LMDB's writer lock is a mutex
    /// owned by that thread, and unlocking it from another thread is undefined behaviour.
    @usableFromInline
    func checkThread() {
        if let write {
            lmdbPrecondition(write.pointee.thread == currentThreadID(),
                         "LMDB write transaction used on a thread other than the one that began it")
        }
    }

    /// Checks for a modifying operation: also, no value bytes of this transaction are being read,
    /// since a write may copy or split the pages those bytes point into.
    @inline(__always)
    func enterWrite(_ db: LMDBDatabase) {
        enter(db)
        guard let write else { lmdbTrap("write operation on a read transaction") }
        lmdbPrecondition(write.pointee.borrowDepth == 0,
                     "LMDB write while value bytes of the same transaction are borrowed "
                        + "(inside withValue, forEach or withCursor); collect what you need, then write")
    }

    /// Brackets a scope that hands out value bytes; see ``enterWrite(_:)``.
    @inline(__always)
    func beginBorrow() { write?.pointee.borrowDepth += 1 }
    @inline(__always)
    func endBorrow() { write?.pointee.borrowDepth -= 1 }

    /// Turns a failed write into an error, remembering `MDB_MAP_FULL` so the write loop re-runs
    /// the body on a bigger map even if the body swallows the error.
    func writeFailure(_ rc: Int32, _ operation: StaticString) -> LMDBError {
        if rc == MDB_MAP_FULL { write?.pointee.mapFull = true }
        return LMDBError.make(rc, operation, nil)
    }

    // MARK: Reading

    /// The value stored under `key`, pointing into the map; valid until this transaction ends or writes.
    func lookup(_ key: UnsafeRawBufferPointer, in db: LMDBDatabase) throws(LMDBError) -> MDB_val? {
        enter(db)
        var k = MDB_val(key)
        var value = MDB_val()
        let rc = write == nil ? reel_guarded_get(txn, db.handle, &k, &value) : insideLMDB { mdb_get(txn, db.handle, &k, &value) }
        guard try LMDBError.found(try Self.faultChecked(rc, "mdb_get"), "mdb_get") else { return nil }
        try map?.check(value, "mdb_get")
        return value
    }

    func withValue<R>(forRawKey key: UnsafeRawBufferPointer, in db: LMDBDatabase,
                      _ body: (RawSpan) throws -> R) throws -> R?
    {
        guard let value = try lookup(key, in: db) else { return nil }
        beginBorrow()
        defer { endBorrow() }
        let bytes = value.bytes
        return try body(RawSpan(_unsafeBytes: bytes))
    }

    /// `mdb_txn_id`: the snapshot of a read transaction, the id-to-be of a write transaction.
    @usableFromInline
    var transactionID: Int {
        checkThread()
        return Int(mdb_txn_id(txn))
    }

    @usableFromInline
    func stat(_ db: LMDBDatabase) throws(LMDBError) -> LMDBStat {
        enter(db)
        var raw = MDB_stat()
        try LMDBError.check(mdb_stat(txn, db.handle, &raw), "mdb_stat")
        return LMDBStat(raw)
    }

    /// Iterates with one cursor and no allocation per entry: each step is one `mdb_cursor_get`
    /// and two spans over the map.
    @usableFromInline
    func forEach(in db: LMDBDatabase, rawStart start: UnsafeRawBufferPointer?, reverse: Bool,
                 _ body: (_ key: RawSpan, _ value: RawSpan) throws -> Bool) throws
    {
        let cursor = try openCursor(db)
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var found = if let start {
            try seek(cursor, to: start, backward: reverse, in: db, &key, &value)
        } else {
            try move(cursor, reverse ? MDB_LAST : MDB_FIRST, &key, &value)
        }
        let step = reverse ? MDB_PREV : MDB_NEXT
        beginBorrow()
        defer { endBorrow() }
        while found {
            let keyBytes = key.bytes
            let valueBytes = value.bytes
            guard try body(RawSpan(_unsafeBytes: keyBytes), RawSpan(_unsafeBytes: valueBytes)) else { return }
            found = try move(cursor, step, &key, &value)
        }
    }

    @usableFromInline
    func withCursor<R>(in db: LMDBDatabase, _ body: (inout LMDBCursor) throws -> R) throws -> R {
        let handle = try openCursor(db)
        beginBorrow()
        var cursor = LMDBCursor(handle: handle, core: self, database: db)
        defer {
            // Two cursors' closures can be nested and the values swapped (`swap(&a, &b)`); the
            // handle closed here must be the one the caller can no longer reach.
            lmdbPrecondition(cursor.handle == handle, "an LMDBCursor was moved out of its withCursor scope")
            endBorrow()
            mdb_cursor_close(handle)
        }
        return try body(&cursor)
    }

    // MARK: Cursor primitives

    func openCursor(_ db: LMDBDatabase) throws(LMDBError) -> OpaquePointer {
        enter(db)
        var cursor: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(txn, db.handle, &cursor), "mdb_cursor_open")
        return cursor!
    }

    /// One `mdb_cursor_get`; `false` when there is no such entry.
    @inline(__always)
    func move(_ cursor: OpaquePointer, _ op: MDB_cursor_op, _ key: inout MDB_val, _ value: inout MDB_val)
        throws(LMDBError) -> Bool
    {
        let rc = write == nil ? reel_guarded_cursor_get(cursor, &key, &value, op) : insideLMDB { mdb_cursor_get(cursor, &key, &value, op) }
        guard try LMDBError.found(try Self.faultChecked(rc, "mdb_cursor_get"), "mdb_cursor_get") else { return false }
        if let map {
            try map.check(key, "mdb_cursor_get")
            try map.check(value, "mdb_cursor_get")
        }
        return true
    }

    /// Positions at the first entry whose key is at or after `target` in the database's order
    /// (`MDB_SET_RANGE`), or when `backward`, at the last entry whose key is at or before it.
    /// `false` when there is none.
    func seek(_ cursor: OpaquePointer, to target: UnsafeRawBufferPointer, backward: Bool, in db: LMDBDatabase,
              _ key: inout MDB_val, _ value: inout MDB_val) throws(LMDBError) -> Bool
    {
        key = MDB_val(target)
        guard try move(cursor, MDB_SET_RANGE, &key, &value) else {
            // Every key is before target.
            return backward ? try move(cursor, MDB_LAST, &key, &value) : false
        }
        guard backward else { return true }
        var wanted = MDB_val(target)
        if mdb_cmp(txn, db.handle, &key, &wanted) == 0 { return true }
        return try move(cursor, MDB_PREV, &key, &value)  // landed after target: step back once
    }
}

extension MDB_val {
    /// Points LMDB at Swift-owned bytes for the duration of one call. LMDB never writes through it.
    @inline(__always)
    init(_ buffer: UnsafeRawBufferPointer) {
        self.init(mv_size: buffer.count,
                  mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? emptyBytes))
    }

    /// The bytes LMDB returned; they live in the map, valid only inside the transaction.
    @inlinable
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }
}

/// A non-null address for empty keys and values, so LMDB never sees a null `mv_data`.
nonisolated(unsafe) private let emptyBytes = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))

/// Where the memory map lies. LMDB trusts the sizes and offsets in its pages; in a damaged file
/// they can point anywhere, and reading there would crash the process or return other memory as
/// data. So every key and value a read transaction gets back is checked to lie inside the map:
/// outside is damage (`MDB_CORRUPTED`), reported before anyone reads a byte of it.
@usableFromInline
struct MapBounds {
    let start: UInt
    let end: UInt

    @inline(__always)
    func check(_ val: MDB_val, _ operation: StaticString) throws(LMDBError) {
        let address = UInt(bitPattern: val.mv_data)
        guard address >= start, address <= end, val.mv_size <= end - address else {
            throw LMDBError(
                code: .corrupted, operation: "\(operation)",
                detail: "LMDB returned \(val.mv_size) bytes at an address outside the data file's map: the file is damaged"
            )
        }
    }
}

extension TransactionCore {
    /// A guarded read that faulted becomes an error; any other code passes through.
    @inline(__always)
    static func faultChecked(_ rc: Int32, _ operation: StaticString) throws(LMDBError) -> Int32 {
        guard rc == REEL_LMDB_FAULTED else { return rc }
        throw LMDBError(
            code: .corrupted, operation: "\(operation)",
            detail: "reading a damaged page of the data file led outside its pages (a memory fault, caught)"
        )
    }
}

/// Runs an LMDB call that walks pages with the calling thread marked for the fault guard: LMDB
/// follows page numbers and offsets from the file unchecked, and a damaged one can make it read
/// anywhere, so a memory fault in here ends the process as a damaged file (exit 74), not a signal.
@inline(__always)
func insideLMDB<R>(_ call: () -> R) -> R {
    reel_fault_guard_enter()
    defer { reel_fault_guard_leave() }
    return call()
}
