import CReelFaultGuard
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
    /// Where the mapping starts; changed with ``currentMapSize``.
    let currentMapStart: Atomic<UInt>
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
        self.currentMapStart = Atomic(0)
        self.maximumMapSize = max(sizes.maximum, opened.mapSize)
        self.registration = registration
        self.id = nextEnvironmentID.wrappingAdd(1, ordering: .relaxed).oldValue
        mapChanged()
    }

    deinit {
        reel_fault_guard_set_region(id, nil, 0)
        mdb_env_close(handle)
        LMDBOpenRegistry.unregister(registration)
    }

    /// Whether a map growth (or adoption) is waiting for this process's open transactions to end:
    /// for tests of that wait, which otherwise could only sleep and hope.
    package var isGrowthWaiting: Bool { gate.exclusiveWaiters.load(ordering: .relaxed) > 0 }

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
    ///
    /// A full disk (`ENOSPC`, `EDQUOT`) is the exception: it is not fatal, and the next write may
    /// succeed once space is back. LMDB writes the new meta page, which is what makes a commit
    /// visible, only after every page write and the data sync succeeded, so a commit that failed
    /// for want of space left no trace a later reader could see; and every later transaction
    /// writes (copy-on-write) all the pages it references that the failed one had touched. That
    /// holds whether the page write or the sync reported the full disk: pages whose writeback
    /// failed belong to the failed transaction alone. (A failed write of the meta page itself
    /// makes LMDB refuse every later transaction on its own, `MDB_PANIC`.)
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
        // An assertion LMDB makes on a damaged page becomes a corrupted-data error in a read, not
        // an abort (see reel_lmdb_assert). Fails only where liblmdb was built without asserts.
        _ = mdb_env_set_assert(env, reel_lmdb_assert)
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
            try MetaPages.check(env)
            var dead: Int32 = 0
            try LMDBError.check(mdb_reader_check(env, &dead), "mdb_reader_check")
            return (env, mapSize(of: env), Int(dead))
        } catch {
            mdb_env_close(env)
            throw error
        }
    }

    /// Makes a memory fault inside any LMDB map of this process end it with `message` and exit
    /// status 74 instead of a signal.
    ///
    /// LMDB trusts the page numbers, offsets and sizes in its file, so a damaged file can make it
    /// read outside the pages it wrote. ReelLMDB checks every key and value it hands out against
    /// the map, and the storage layer checksums every record, but a fault inside LMDB's own walk
    /// of a damaged B-tree page remains possible; this turns it into a clear exit. Faults outside
    /// any map are left to end the process as they would have. For executables: call once, early.
    public static func guardMapFaults(message: String) {
        // Kept for the life of the process: the handler may read it at any time.
        let text = strdup(message)
        reel_fault_guard_install(text)
    }

    /// Where the current mapping of the data file starts, or 0 when it cannot be found.
    ///
    /// LMDB does not say (`mdb_env_info`'s `me_mapaddr` is only the address asked for with
    /// `MDB_FIXEDMAP`), so this finds the mapping of the data file's inode in `/proc/self/maps`.
    /// Reads the environment, so callers hold the gate or are `init`.
    static func mapStart(of env: OpaquePointer) -> UInt {
        var fd: Int32 = -1
        var info = Glibc.stat()
        guard mdb_env_get_fd(env, &fd) == MDB_SUCCESS, fstat(fd, &info) == 0,
            let maps = fopen("/proc/self/maps", "r")
        else { return 0 }
        defer { fclose(maps) }
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), maps) != nil {
            // start-end perms offset major:minor inode path
            let fields = String(cString: line).split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[2] == "00000000", UInt64(fields[4]) == UInt64(info.st_ino),
                let start = fields[0].split(separator: "-").first.flatMap({ UInt($0, radix: 16) })
            else { continue }
            return start
        }
        return 0
    }

    /// Records a new mapping (after open, growth or adoption; the gate held exclusively or in
    /// `init`): for the bounds check of every value read, and for the fault guard.
    func mapChanged() {
        let start = Self.mapStart(of: handle)
        let size = Self.mapSize(of: handle)
        currentMapStart.store(start, ordering: .relaxed)
        currentMapSize.store(size, ordering: .relaxed)
        reel_fault_guard_set_region(id, UnsafeRawPointer(bitPattern: start), start == 0 ? 0 : size)
    }

    /// The bounds a read transaction checks every key and value against (`nil` when the mapping
    /// could not be found, which leaves the check to the checksums).
    var mapBounds: MapBounds? {
        let start = currentMapStart.load(ordering: .relaxed)
        guard start != 0 else { return nil }
        return MapBounds(start: start, end: start + UInt(currentMapSize.load(ordering: .relaxed)))
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
