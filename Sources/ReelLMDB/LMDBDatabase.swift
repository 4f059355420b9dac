import CReelLMDB

/// A handle to one named database of an ``LMDBEnvironment`` (an `MDB_dbi`).
///
/// Open it once with ``LMDBEnvironment/openDatabase(_:create:integerKeys:)`` and keep it for the
/// life of the environment; it is a plain value, valid in every later transaction of that
/// environment (and only that one: using it with another environment traps).
public struct LMDBDatabase: Sendable, Hashable {
    /// The database's name in the environment.
    public let name: String
    /// Whether keys are native-endian machine integers compared numerically (`MDB_INTEGERKEY`), as
    /// recorded in the file. The `UInt64`-key conveniences encode to match: native-endian here,
    /// big-endian otherwise, so that byte order equals numeric order in both cases.
    public let integerKeys: Bool
    let handle: MDB_dbi
    let environmentID: UInt64

    /// The 8 bytes this database uses as the key for `key`.
    @inline(__always)
    func encode(_ key: UInt64) -> UInt64 {
        integerKeys ? key : key.bigEndian
    }

    /// Reads an 8-byte key of this database back as a number (big-endian, or native-endian for
    /// ``integerKeys`` databases).
    /// - Parameter key: a key from `forEach` or a cursor.
    /// - Returns: the number, or `nil` if the key is not 8 bytes long.
    public func decodeUInt64Key(_ key: RawSpan) -> UInt64? {
        guard key.byteCount == 8 else { return nil }
        let raw = key.unsafeLoadUnaligned(as: UInt64.self)
        return integerKeys ? raw : UInt64(bigEndian: raw)
    }

    func decodeUInt64Key(_ key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 8 else { return nil }
        let raw = key.loadUnaligned(as: UInt64.self)
        return integerKeys ? raw : UInt64(bigEndian: raw)
    }

    /// The 8 key bytes this database stores for `key`, for code that builds keys itself.
    /// - Parameter key: the number.
    /// - Returns: its encoding (big-endian, or native-endian for ``integerKeys`` databases).
    public func encodeUInt64Key(_ key: UInt64) -> [UInt8] {
        withUnsafeBytes(of: encode(key)) { Array($0) }
    }
}

extension LMDBEnvironment {
    /// Opens the named database `name`, creating it first if asked.
    ///
    /// Open databases up front (at startup), outside any transaction of this environment: a
    /// transaction that began before a database was first opened does not see the handle. Calling
    /// this inside a ``read(_:)`` or ``write(_:)`` body on the same thread traps, because it
    /// serializes with other openers and could otherwise wait on a thread that waits for this
    /// one's transaction. Opening the same name again returns an equal handle.
    /// - Parameters:
    ///   - name: the database's name (any string without NUL bytes).
    ///   - create: create it (in a write transaction of its own) when it does not exist.
    ///   - integerKeys: when creating, use `MDB_INTEGERKEY`; ignored for an existing database,
    ///     whose recorded flags win (see ``LMDBDatabase/integerKeys``).
    /// - Returns: the handle, or `nil` if the database does not exist and `create` is `false`.
    /// - Throws: ``LMDBError``: `databasesFull` beyond ``Options/maxDatabases``, `incompatible`
    ///   when `name` is not a database, `accessDenied` when creating in a read-only environment.
    public func openDatabase(_ name: String, create: Bool = false, integerKeys: Bool = false)
        throws(LMDBError) -> LMDBDatabase?
    {
        lmdbPrecondition(
            gate.sharedHoldsOnCurrentThread == 0,
            "LMDBEnvironment.openDatabase called inside a transaction of the same environment; open databases up front")
        var flags = create ? UInt32(MDB_CREATE) : 0
        if integerKeys { flags |= UInt32(MDB_INTEGERKEY) }
        // LMDB: mdb_dbi_open must not run in two transactions of a process at once, and the
        // transaction that used it must end before another uses it. The lock is only ever taken by
        // a thread holding no transaction (checked above), so waiting for it cannot close a cycle.
        return try databaseOpenLock.withLock { _ throws(LMDBError) -> LMDBDatabase? in
            if create {
                do throws(WriteFailure<LMDBError>) {
                    return try performWrite { (txn) throws(LMDBError) in
                        try openHandle(txn.core.txn, name, flags)
                    }
                } catch {
                    switch error {
                    case .lmdb(let failure), .body(let failure): throw failure
                    }
                }
            }
            // A read transaction is enough to look an existing database up; committing it (rather
            // than aborting) is what publishes the new handle to the environment.
            let txn = try beginTransaction(readOnly: true)
            defer { gate.leaveShared() }
            let database: LMDBDatabase?
            do throws(LMDBError) {
                database = try openHandle(txn, name, flags)
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
            try LMDBError.check(mdb_txn_commit(txn), "mdb_txn_commit")
            return database
        }
    }

    private func openHandle(_ txn: OpaquePointer, _ name: String, _ flags: UInt32) throws(LMDBError)
        -> LMDBDatabase?
    {
        var handle: MDB_dbi = 0
        guard try LMDBError.found(insideLMDB { mdb_dbi_open(txn, name, flags, &handle) }, "mdb_dbi_open") else {
            return nil
        }
        var recorded: UInt32 = 0
        try LMDBError.check(mdb_dbi_flags(txn, handle, &recorded), "mdb_dbi_flags")
        return LMDBDatabase(
            name: name, integerKeys: recorded & UInt32(MDB_INTEGERKEY) != 0,
            handle: handle, environmentID: id)
    }
}
