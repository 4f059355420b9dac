#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ReelCore
import ReelJSON
import ReelLMDB
import Synchronization

/// A Reel data directory: one LMDB environment holding the action log, checkpoints, idempotency
/// keys and metadata. This is the narrow storage interface the store engine and the time-travel
/// tools use; nothing above it sees LMDB.
///
/// Databases:
/// - `log`: big-endian seq → ``ActionEnvelope`` (appended with `MDB_APPEND`; never rewritten)
/// - `checkpoints`: big-endian seq → ``Checkpoint``
/// - `dedup`: idempotency key → the seqs it was given
/// - `meta`: format version, the reducer the directory was created for, creation time
/// - `changes`: the change index, derived from the log (``ChangeIndexKeys``)
/// - `types`: every (type, version) the log holds with its first seq (``TypeCatalog``)
/// - `branches`: branch name → ``BranchRecord``; `branch-log`: (branch id, seq) → its actions
///
/// A read-only handle (``Options/readOnly``) never writes and is safe to use while a daemon in
/// another process appends.
public final class DataDirectory: Sendable {
    /// The storage format this build writes, recorded in `meta` when a directory is created.
    ///
    /// Format 2 puts a checksum on every record (``RecordChecksum``). Format 1 directories are
    /// upgraded in place when opened for writing (``upgradeFromFormat1(env:databases:path:)``) and
    /// read as they are when opened read-only.
    public static let formatVersion = "2"
    /// The formats this build opens.
    static let readableFormats = ["1", "2"]

    /// How to open a data directory.
    public struct Options: Sendable {
        /// Open without writing anything, for inspection while a daemon runs.
        public var readOnly: Bool = false
        /// Size of the memory map to start with; it grows by itself when full.
        public var initialMapSize: Int = 64 << 20
        /// The map never grows beyond this: writes then fail with ``StorageError/Code/full``.
        public var maxMapSize: Int = 1 << 40
        /// `false` skips fsync at commit: for benchmarks and throwaway tests only, never for data
        /// anyone wants to keep.
        public var durable: Bool = true
        /// How long (in seconds) acknowledged groups may wait in the journal before LMDB receives
        /// them, in one commit of many groups, when fewer than `Journal.applyBytes` arrive (a
        /// trickle: a busier store commits each time that much waits). Longer means fewer LMDB
        /// commits whose syncs compete with the journal's: at one client, each collision is a
        /// dispatch that waits for LMDB's sync, and one commit every 20 ms made them 1–2% of the
        /// dispatches (p99 0.38–0.41 ms; every 100 ms, 0.29–0.32: BENCHMARKS.md, "Latency").
        /// Tests make it long to see the journal alone at work.
        public var journalApplyDelay: Double = 0.100
        /// The journal's size before writing goes back to its start (once LMDB holds everything).
        public var journalCycleSize: Int = 64 << 20
        /// How much of the journal to write with zeros when it is opened for writing (see
        /// `JournalFile.preallocate`: about 45 ms for 64 MiB, once per data directory; a disk
        /// too full for them leaves the file to grow when it needs to). The daemon allocates the whole cycle, so that the file
        /// never grows under load (a growth's allocation and sync hold acknowledgements up: 50 × 16
        /// pipelined, p99 10–12 → 9.5–11 ms); tests keep it small, since every open reads the
        /// whole file.
        public var journalPreallocation: Int = 1 << 20
        /// A new directory's history starts after this checkpoint: its seq is the directory's
        /// ``Metadata/origin``, its state the one the first action folds into (`reel import
        /// --bundle`). Written with the metadata, in the directory's first commit; ignored when
        /// the directory exists.
        public var origin: Checkpoint?

        public init(readOnly: Bool = false, initialMapSize: Int = 64 << 20, maxMapSize: Int = 1 << 40, durable: Bool = true) {
            self.readOnly = readOnly
            self.initialMapSize = initialMapSize
            self.maxMapSize = maxMapSize
            self.durable = durable
        }
    }

    public let path: String
    public let isReadOnly: Bool
    /// Metadata recorded when the directory was created.
    public let metadata: Metadata
    /// Stale reader slots (left by killed processes) cleared when the directory was opened.
    public let staleReadersCleared: Int
    /// Whether records without a checksum (storage format 1) are read: only from a format-1
    /// directory opened read-only. Everywhere else such a record is damage.
    public let acceptsLegacyRecords: Bool
    /// The number of records rewritten with checksums when a format-1 directory was opened.
    public let upgradedRecords: Int
    /// Acknowledged actions found in the journal but not yet in LMDB when the directory was
    /// opened for writing, and moved into LMDB then (after a crash or a kill).
    public let journalActionsRecovered: Int

    let env: LMDBEnvironment
    let log: LMDBDatabase
    let checkpoints: LMDBDatabase
    let dedup: LMDBDatabase
    let meta: LMDBDatabase
    /// The change index; `nil` in a directory opened read-only before any daemon made it.
    let changes: LMDBDatabase?
    /// The (type, version) pairs the log holds; `nil` in a directory opened read-only before any
    /// daemon made it.
    let types: TypeCatalog?
    /// The branches and their actions; `nil` in a directory opened read-only before any daemon
    /// made them.
    let branchesDB: LMDBDatabase?
    let branchLogDB: LMDBDatabase?
    /// Who works out the change index's entries of the actions this handle commits.
    let changeFeed = Mutex<(any ChangeIndexFeed)?>(nil)
    /// The journal's write side; `nil` for a read-only handle.
    let journal: Journal?
    /// Acknowledged actions not yet in LMDB (see ``appendDurably(_:)``).
    let tail: Mutex<AckedTail>

    /// Opens a data directory, creating it (unless read-only) when it does not exist.
    ///
    /// - Parameters:
    ///   - path: the directory.
    ///   - reducerName: the reducer the caller runs. A new directory records it; an existing one
    ///     made for another reducer is refused. `nil` (for tools) accepts any.
    ///   - options: how to open it.
    /// - Throws: ``StorageError`` `.notFound`, `.incompatible` or `.io` with a reason a person can act on.
    public convenience init(path: String, reducerName: String?, options: Options = Options()) throws(StorageError) {
        if !options.readOnly, access(path + "/data.mdb", F_OK) != 0 {
            try Self.create(at: path, reducerName: reducerName, options: options)
        } else if options.readOnly, access(path + "/data.mdb", F_OK) != 0 {
            throw Self.missingStore(at: path)
        }
        try self.init(opening: path, reducerName: reducerName, options: options)
    }

    /// Creates a data directory so that a crash or power loss at any moment leaves either no data
    /// file or a complete, synced one: the environment is made in a staging directory inside
    /// `path`, its metadata committed (LMDB's first commit syncs the whole file, the two initial
    /// meta pages too), and only then is the data file renamed into place and the directory
    /// synced. LMDB alone writes its initial meta pages unsynced, and a power cut before the
    /// first commit's sync could leave them torn: a directory that refuses to open.
    private static func create(at path: String, reducerName: String?, options: Options) throws(StorageError) {
        let staging = path + "/.reel-creating"
        let leftovers = ["data.mdb", "lock.mdb", JournalFile.name]
        for name in leftovers { unlink(staging + "/" + name) }  // a creation cut short
        rmdir(staging)
        _ = try DataDirectory(opening: staging, reducerName: reducerName, options: options)
        guard rename(staging + "/data.mdb", path + "/data.mdb") == 0 else {
            throw StorageError(.io, "cannot create \(path)/data.mdb: \(String(cString: strerror(errno)))")
        }
        let directory = open(path, O_RDONLY | O_DIRECTORY)
        defer { if directory >= 0 { close(directory) } }
        guard directory >= 0, !options.durable || fsync(directory) == 0 else {
            throw StorageError(.io, "cannot sync \(path) after creating its data file: \(String(cString: strerror(errno)))")
        }
        for name in leftovers { unlink(staging + "/" + name) }  // (the empty journal: made again below)
        rmdir(staging)
    }

    private init(opening path: String, reducerName: String?, options: Options) throws(StorageError) {
        self.path = path
        self.isReadOnly = options.readOnly
        do {
            env = try LMDBEnvironment(
                path: path,
                options: LMDBEnvironment.Options(
                    mapSize: options.initialMapSize, maxMapSize: options.maxMapSize, maxDatabases: 12,
                    readOnly: options.readOnly, durability: options.durable ? .full : .noSync
                )
            )
        } catch {
            throw Self.openError(error, path: path, readOnly: options.readOnly)
        }
        staleReadersCleared = env.staleReadersCleared
        let typesDB: LMDBDatabase?
        do {
            let create = !options.readOnly
            guard let log = try env.openDatabase("log", create: create),
                let checkpoints = try env.openDatabase("checkpoints", create: create),
                let dedup = try env.openDatabase("dedup", create: create),
                let meta = try env.openDatabase("meta", create: create)
            else {
                throw StorageError(.notFound, "\(path) is not a Reel data directory (no log in it)")
            }
            (self.log, self.checkpoints, self.dedup, self.meta) = (log, checkpoints, dedup, meta)
            changes = try env.openDatabase("changes", create: create)
            typesDB = try env.openDatabase("types", create: create)
            branchesDB = try env.openDatabase("branches", create: create)
            branchLogDB = try env.openDatabase("branch-log", create: create)
        } catch let error as StorageError {
            throw error
        } catch {
            throw Self.wrap(error, "cannot open the databases in \(path)")
        }
        let checkpointsDB = checkpoints
        let origin = options.origin.map { origin in
            let record = CheckpointCodec.encode(origin)
            return (seq: origin.seq, write: { (txn: borrowing LMDBWriteTransaction) throws -> Void in
                try txn.put(record, forKey: origin.seq, in: checkpointsDB, append: false)
            })
        }
        var metadata = try Metadata.load(
            env: env, db: meta, path: path, reducerName: reducerName, readOnly: options.readOnly, origin: origin
        )
        var upgraded = 0
        if metadata.formatVersion == "1" && !options.readOnly {
            upgraded = try Self.upgradeFromFormat1(env: env, databases: (log, checkpoints, dedup, meta), metadata: &metadata, path: path)
        }
        self.metadata = metadata
        self.upgradedRecords = upgraded
        acceptsLegacyRecords = metadata.formatVersion == "1"
        let (env, log, meta, startsAfter) = (env, log, meta, metadata.origin)
        var catalog: TypeCatalog?
        do {
            catalog = try env.read { txn in try TypeCatalog.load(db: typesDB, meta: meta, in: txn) }
        } catch {
            throw Self.wrap(error, "cannot read the catalog of action types in \(path)")
        }
        let latest = { () throws(StorageError) -> UInt64 in
            do {
                return try env.read { txn in try Self.latestSeq(txn, log, origin: startsAfter) }
            } catch {
                throw Self.wrap(error, "cannot read the log")
            }
        }
        if options.readOnly {
            journal = nil
            journalActionsRecovered = 0
            tail = Mutex(try Self.loadTail(path: path, latest: latest))
        } else {
            let databases = (log: log, dedup: self.dedup, checkpoints: self.checkpoints)
            let replayCatalog = catalog
            let (journal, recovered) = try Self.replayJournal(path: path, options: options, latest: try latest()) {
                (batch) throws(StorageError) in
                try Self.commit(batch, env: env, databases: databases, origin: startsAfter, types: replayCatalog)
            }
            self.journal = journal
            journalActionsRecovered = recovered
            tail = Mutex(AckedTail(applied: try latest()))
            if catalog == nil, let typesDB {
                do {
                    catalog = try TypeCatalog.build(db: typesDB, meta: meta, log: log, env: env)
                } catch {
                    throw Self.wrap(error, "cannot list the action types of the log in \(path)")
                }
            }
        }
        types = catalog
    }

    deinit {
        // The applier (if it ran) holds the directory only while it commits; it ends now. What
        // it had not moved into LMDB stays in the journal, durable, for the next open.
        journal?.stopSoon()
    }

    /// Why there is no store to read at `path`: no directory, or a directory that is not Reel's.
    private static func missingStore(at path: String) -> StorageError {
        switch try? inspect(path) {
        case .absent?: StorageError(.notFound, "no such directory: \(path)")
        case .notADirectory?: StorageError(.notFound, "\(path) is not a directory")
        case .empty?: StorageError(.notFound, "\(path) is not a Reel data directory: it is empty (a daemon creates a store there at its first start)")
        case .foreign?, .store?, nil: StorageError(.notFound, "\(path) is not a Reel data directory: it has no data.mdb")
        }
    }

    private static func openError(_ error: LMDBError, path: String, readOnly: Bool) -> StorageError {
        if error.code == .noSuchFile {
            return StorageError(.notFound, "no data directory at \(path)", underlying: error)
        }
        if error.code == .accessDenied {
            return StorageError(.io, "permission denied opening \(path): \(error.message)", underlying: error)
        }
        if error.code == .corrupted {
            return StorageError(
                .corrupt, "\(path) is damaged: \(error.detail ?? error.message); restore it from a backup", underlying: error
            )
        }
        if error.code == .invalid || error.code == .versionMismatch || error.code == .incompatible {
            return StorageError(.incompatible, "\(path) is not an LMDB environment this build can read: \(error.message)", underlying: error)
        }
        return StorageError(.io, "cannot open \(path): \(error.message)", underlying: error)
    }

    /// Wraps an LMDB failure in a ``StorageError``, telling "full" apart from other I/O failures.
    static func wrap(_ error: any Error, _ what: String) -> StorageError {
        if let error = error as? StorageError { return error }
        guard let lmdb = error as? LMDBError else {
            return StorageError(.io, "\(what): \(error)")
        }
        if lmdb.code == .mapFull || lmdb.code == .noSpace || lmdb.code == .quotaExceeded {
            return StorageError(.full, "\(what): storage is full (\(lmdb.message))", underlying: lmdb)
        }
        if lmdb.code == .corrupted || lmdb.code == .pageNotFound {
            return StorageError(
                .corrupt, "\(what): the data file is damaged (\(lmdb.detail ?? lmdb.message)); `reel verify` reports what it can read",
                underlying: lmdb
            )
        }
        return StorageError(.io, "\(what): \(lmdb.message)", underlying: lmdb)
    }

    /// Makes a crash while reading a damaged data file end the process with a clear message on
    /// stderr and exit status 74, instead of a signal (see `LMDBEnvironment.guardMapFaults`).
    /// For executables, once, early.
    ///
    /// - Parameter program: the name the message starts with.
    public static func guardAgainstDamagedFiles(program: String) {
        LMDBEnvironment.guardMapFaults(
            message: "\(program): a data file is damaged: reading it led outside its pages, and nothing was served from it; "
                + "`reel verify --data-dir DIR` reports what it can read; restore from a backup"
        )
    }

    /// Current size of the memory map in bytes.
    public var mapSize: Int { env.mapSize }

    /// The map's size and use, and LMDB's reader slots, now.
    public var mapUsage: MapUsage {
        let info = env.info
        return MapUsage(bytesUsed: info.bytesUsed, mapSize: info.mapSize, readerSlotsUsed: info.readerSlotsUsed, maxReaders: info.maxReaders)
    }
}

/// How much of its LMDB map a data directory uses, and its reader slots.
public struct MapUsage: Sendable, Equatable {
    /// Bytes of the map in use: every page up to the last one used.
    public var bytesUsed: Int
    /// The map's current size in bytes (it grows up to the configured maximum).
    public var mapSize: Int
    /// Reader slots in use (LMDB's high-water mark: an upper bound on the read transactions open
    /// across all processes).
    public var readerSlotsUsed: Int
    /// The size of the reader table.
    public var maxReaders: Int
}
