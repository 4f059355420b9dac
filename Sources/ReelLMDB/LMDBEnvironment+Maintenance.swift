import CReelLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Statistics of one database (`MDB_stat`) as of a transaction's snapshot.
public struct LMDBStat: Sendable, Hashable {
    /// The page size in bytes.
    public let pageSize: Int
    /// The height of the B-tree.
    public let depth: Int
    /// Internal (non-leaf) pages.
    public let branchPages: Int
    /// Leaf pages.
    public let leafPages: Int
    /// Overflow pages, used by values larger than about half a page.
    public let overflowPages: Int
    /// Number of entries.
    public let entries: Int

    init(_ raw: MDB_stat) {
        pageSize = Int(raw.ms_psize)
        depth = Int(raw.ms_depth)
        branchPages = raw.ms_branch_pages
        leafPages = raw.ms_leaf_pages
        overflowPages = raw.ms_overflow_pages
        entries = raw.ms_entries
    }
}

extension LMDBEnvironment {
    /// The environment's state (`MDB_envinfo`).
    public struct Info: Sendable, Hashable {
        /// The size of this process's memory map in bytes.
        public let mapSize: Int
        /// The number of the last page in use; `(lastPageNumber + 1) * pageSize` bytes are used.
        public let lastPageNumber: Int
        /// The id of the last committed write transaction.
        public let lastTransactionID: Int
        /// The size of the reader table (``Options/maxReaders``, or the value of the first opener).
        public let maxReaders: Int
        /// Reader-table entries used so far (LMDB's high-water mark `me_numreaders`): an upper bound
        /// on the read transactions open across all processes right now.
        public let readerSlotsUsed: Int
        /// The page size in bytes.
        public let pageSize: Int

        /// Bytes of the map in use: every page up to the last one used.
        public var bytesUsed: Int { (lastPageNumber + 1) * pageSize }
    }

    /// A snapshot of the environment's state (`mdb_env_info`).
    public var info: Info {
        // mdb_env_info reads the meta pages, which live in the map: hold the gate against a remap.
        gate.enterShared()
        defer { gate.leaveShared() }
        var raw = MDB_envinfo()
        mdb_env_info(handle, &raw)
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        return Info(
            mapSize: raw.me_mapsize, lastPageNumber: raw.me_last_pgno, lastTransactionID: raw.me_last_txnid,
            maxReaders: Int(raw.me_maxreaders), readerSlotsUsed: Int(raw.me_numreaders), pageSize: Int(stat.ms_psize))
    }

    /// Statistics of `database` as of now (a read transaction of its own).
    /// - Parameter database: a database of this environment.
    /// - Returns: its page counts, depth and number of entries.
    /// - Throws: ``LMDBError`` from beginning the read transaction or from `mdb_stat`.
    public func stat(_ database: LMDBDatabase) throws(LMDBError) -> LMDBStat {
        let txn = try beginTransaction(readOnly: true)
        defer {
            mdb_txn_abort(txn)
            gate.leaveShared()
        }
        return try TransactionCore(txn: txn, environmentID: id, write: nil, map: nil).stat(database)
    }

    /// Flushes commits to disk (`mdb_env_sync`). Needed only with ``Durability/noSync``, where
    /// commits return before the flush; with ``Durability/full`` every commit already did this.
    /// - Parameter force: flush even under `MDB_NOSYNC` (the default); `false` lets LMDB skip it.
    /// - Throws: ``LMDBError`` from `fdatasync` (`ioError`), or `accessDenied` when read-only.
    public func sync(force: Bool = true) throws(LMDBError) {
        try LMDBError.check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
    }

    /// Writes a consistent copy of the whole environment into the directory `path`, while other
    /// threads and processes keep reading and writing (a hot backup, `mdb_env_copy2`).
    ///
    /// The copy is the snapshot of one read transaction. Open it as an environment of its own.
    /// Not from inside a ``write(_:)`` body: a plain copy briefly takes the writer lock.
    /// - Parameters:
    ///   - path: the target directory; created if missing, and must not already hold a `data.mdb`.
    ///   - compact: `MDB_CP_COMPACT`: omit free pages and renumber, giving a smaller file (slower).
    /// - Throws: ``LMDBError``: `fileExists` if the target has a data file, or I/O errors.
    public func copy(to path: String, compact: Bool = false) throws(LMDBError) {
        lmdbPrecondition(writerThread.load(ordering: .relaxed) != currentThreadID(),
                     "LMDBEnvironment.copy called inside a write transaction of the same environment; it would deadlock")
        try LMDBFileSystem.createDirectories(path, mode: options.directoryMode)
        let flags = compact ? UInt32(MDB_CP_COMPACT) : 0
        var fruitlessAdoptions = 0
        while true {
            // The copy runs its own read transaction over the map, so it holds the gate like one.
            gate.enterShared()
            let rc = insideLMDB { mdb_env_copy2(handle, path, flags) }
            gate.leaveShared()
            if rc == MDB_MAP_RESIZED {
                // Another process grew the map before the copy's transaction began. The data file
                // was already created (O_EXCL, so it is ours and empty): remove it and start over.
                unlink(path + "/data.mdb")
                try adoptRecordedMapSize(fruitlessSoFar: &fruitlessAdoptions)
                continue
            }
            try LMDBError.check(rc, "mdb_env_copy2", detail: path)
            return
        }
    }
}
