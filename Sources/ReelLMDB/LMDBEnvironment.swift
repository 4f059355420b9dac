import CReelLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: a directory holding one memory-mapped data file, its lock file, and
/// named databases (``LMDBDatabase``).
///
/// Share one instance per directory across the whole process: LMDB forbids opening the same
/// environment twice in one process (closing the second handle would drop the first one's file
/// locks), so a second `init` for the same directory throws ``LMDBError/Code/busy``.
///
/// All access is scoped: ``read(_:)`` and ``write(_:)`` run a closure with a transaction that
/// cannot outlive it. Read transactions work on any thread (`MDB_NOTLS`); at most one write
/// transaction runs at a time per environment (across processes, LMDB's own lock), and its
/// closure stays on the calling thread. The map grows by itself when a write finds it full.
///
/// The environment closes when the last reference goes away; no transaction can be open then,
/// because every transaction lives inside a call on this object.
public final class LMDBEnvironment: Sendable {
    /// The directory given at open.
    public let path: String
    /// The options given at open.
    public let options: Options
    /// How many reader slots of dead processes `mdb_reader_check` freed while opening.
    public let staleReadersCleared: Int

    /// The `MDB_env`. LMDB's environment calls used here are thread-safe, except remapping,
    /// which the ``gate`` serializes against every transaction.
    nonisolated(unsafe) let handle: OpaquePointer
    /// Identifies this instance so a database handle is never used with another environment.
    let id: UInt64
    let gate = LMDBMapGate()
    /// The growth limit, page-aligned.
    let maximumMapSize: Int
    /// The size of this process's mapping; changed only while holding the gate exclusively.
    let currentMapSize: Atomic<Int>
    /// The OS thread running a write transaction of this environment, or 0. Written only while
    /// LMDB's writer lock is held, so a thread only ever finds its own id here when it is the writer.
    let writerThread = Atomic<UInt>(0)
    /// `mdb_dbi_open` must not run in two transactions of a process at once.
    let databaseOpenLock = Mutex<Void>(())
    /// Set when a commit failed with an operating-system error: see ``fatalWriteError``.
    let failedCommit = Mutex<LMDBError?>(nil)
    private let registration: LMDBOpenRegistry.Identity

    /// Opens (and unless read-only, creates) the environment in the directory at `path`.
    ///
    /// Creates missing directories (not when read-only), clears reader slots left by dead
    /// processes, and sets the map to at least `options.mapSize`.
    /// - Parameters:
    ///   - path: the environment's directory.
    ///   - options: sizes, limits, durability and permissions.
    /// - Throws: ``LMDBError``: `busy` if this process already has it open, `noSuchFile` for a
    ///   missing read-only environment, `invalid` / `versionMismatch` for a file that is not a
    ///   compatible LMDB file, or the failing system call's `errno`.
    public init(path: String, options: Options = Options()) throws(LMDBError) {
        let sizes = options.pageAlignedSizes
        if !options.readOnly {
            try LMDBFileSystem.createDirectories(path, mode: options.directoryMode)
        }
        let registration = try LMDBOpenRegistry.register(path)
        let opened: (handle: OpaquePointer, mapSize: Int, cleared: Int)
        do {
            opened = try Self.open(path: path, options: options, initialMapSize: sizes.initial)
        } catch {
            LMDBOpenRegistry.unregister(registration)
            throw error
        }
        self.path = path
        self.options = options
        self.handle = opened.handle
        self.staleReadersCleared = opened.cleared
        self.currentMapSize = Atomic(opened.mapSize)
        self.maximumMapSize = max(sizes.maximum, opened.mapSize)
        self.registration = registration
        self.id = nextEnvironmentID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    deinit {
        mdb_env_close(handle)
        LMDBOpenRegistry.unregister(registration)
    }

    /// The size of this process's memory map in bytes. Grows as writes need it, and when another
    /// process has grown the environment.
    public var mapSize: Int { currentMapSize.load(ordering: .relaxed) }

    /// The largest key (and `MDB_DUPSORT` value) LMDB accepts, in bytes: 511 with default builds.
    public var maxKeySize: Int { Int(mdb_env_get_maxkeysize(handle)) }

    /// The error of a commit that failed in the operating system (`fsync`, `write`), after which
    /// this instance refuses further writes.
    ///
    /// After a failed `fsync` the kernel may have dropped the dirty pages and a later `fsync` can
    /// report success for data that never reached the disk, so retrying the commit "as if nothing
    /// happened" could acknowledge lost writes. Close this instance and open the environment again
    /// (LMDB then reads the last durable state) once the cause is fixed.
    public var fatalWriteError: LMDBError? { failedCommit.withLock { $0 } }

    /// Frees reader slots held by processes that no longer exist (`mdb_reader_check`).
    ///
    /// A process killed inside a read transaction leaves its slot behind; until cleared, it keeps
    /// old pages from being reused and takes one of ``Options/maxReaders``. This already runs at
    /// open; call it periodically from a long-running daemon.
    /// - Returns: how many slots were freed.
    /// - Throws: ``LMDBError`` if the lock table cannot be locked.
    @discardableResult
    public func clearStaleReaders() throws(LMDBError) -> Int {
        var dead: Int32 = 0
        try LMDBError.check(mdb_reader_check(handle, &dead), "mdb_reader_check")
        return Int(dead)
    }

    /// Does the fallible part of `init`; on failure nothing is left open.
    private static func open(path: String, options: Options, initialMapSize: Int) throws(LMDBError)
        -> (handle: OpaquePointer, mapSize: Int, cleared: Int)
    {
        var created: OpaquePointer?
        try LMDBError.check(mdb_env_create(&created), "mdb_env_create")
        guard let env = created else { throw LMDBError(code: .outOfMemory, operation: "mdb_env_create") }
        do {
            try LMDBError.check(mdb_env_set_maxreaders(env, UInt32(clamping: options.maxReaders)),
                                "mdb_env_set_maxreaders")
            try LMDBError.check(mdb_env_set_maxdbs(env, MDB_dbi(clamping: options.maxDatabases)),
                                "mdb_env_set_maxdbs")
            if !options.readOnly {
                // A new file records this size; an existing one keeps its own until we raise it below.
                try LMDBError.check(mdb_env_set_mapsize(env, initialMapSize), "mdb_env_set_mapsize")
            }
            try LMDBError.check(mdb_env_open(env, path, options.environmentFlags, options.fileMode),
                                "mdb_env_open", detail: path)
            if !options.readOnly {
                // Size 0 adopts the size the file records (another process may have grown it), then
                // raise it to the requested initial size: never shrink a map others rely on.
                try LMDBError.check(mdb_env_set_mapsize(env, 0), "mdb_env_set_mapsize")
                if mapSize(of: env) < initialMapSize {
                    try LMDBError.check(mdb_env_set_mapsize(env, initialMapSize), "mdb_env_set_mapsize")
                }
            }
            var dead: Int32 = 0
            try LMDBError.check(mdb_reader_check(env, &dead), "mdb_reader_check")
            return (env, mapSize(of: env), Int(dead))
        } catch {
            mdb_env_close(env)
            throw error
        }
    }

    /// The size of the current mapping. Reads the environment, so callers hold the gate or are `init`.
    static func mapSize(of env: OpaquePointer) -> Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }
}

/// Source of ``LMDBEnvironment/id``; starts at 1 so 0 never names an environment.
private let nextEnvironmentID = Atomic<UInt64>(1)
