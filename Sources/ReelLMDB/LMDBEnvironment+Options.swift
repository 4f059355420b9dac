import CReelLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LMDBEnvironment {
    /// How an environment is opened. Every field has a default suited to a small local daemon.
    public struct Options: Sendable {
        /// The initial size of the memory map in bytes, rounded up to the OS page size.
        ///
        /// The map is address space, not disk: the data file only grows as pages are written.
        /// When an existing environment already records a larger map, the larger one is kept.
        /// Ignored for read-only environments, which use the size recorded in the file.
        public var mapSize: Int
        /// The largest size the map may grow to when a write finds it full. Writes beyond it
        /// fail with ``LMDBError/Code/mapFull``. Values below ``mapSize`` are raised to it.
        public var maxMapSize: Int
        /// How many named databases the environment can hold open (`mdb_env_set_maxdbs`).
        public var maxDatabases: Int
        /// How many read transactions may be open at once across all processes (`mdb_env_set_maxreaders`).
        /// With `MDB_NOTLS` a slot is held per open read transaction, not per thread.
        public var maxReaders: Int
        /// Opens with `MDB_RDONLY`: no writes, no directory creation; safe while another process writes.
        public var readOnly: Bool
        /// Whether commits wait for the disk.
        public var durability: Durability
        /// Permissions for the data and lock files when they are created (and, with execute bits
        /// added where read bits are set, for the directory).
        public var fileMode: mode_t

        /// Creates options; see each property for the meaning and the default.
        /// - Parameters:
        ///   - mapSize: initial map size in bytes (default 64 MiB).
        ///   - maxMapSize: growth limit in bytes (default 64 GiB).
        ///   - maxDatabases: named databases (default 16).
        ///   - maxReaders: concurrent read transactions (default 126, LMDB's own default).
        ///   - readOnly: open with `MDB_RDONLY` (default `false`).
        ///   - durability: `.full` (default) or `.noSync`.
        ///   - fileMode: permissions of created files (default `0o600`: event logs are private).
        public init(
            mapSize: Int = 64 << 20,
            maxMapSize: Int = 64 << 30,
            maxDatabases: Int = 16,
            maxReaders: Int = 126,
            readOnly: Bool = false,
            durability: Durability = .full,
            fileMode: mode_t = 0o600
        ) {
            self.mapSize = mapSize
            self.maxMapSize = maxMapSize
            self.maxDatabases = maxDatabases
            self.maxReaders = maxReaders
            self.readOnly = readOnly
            self.durability = durability
            self.fileMode = fileMode
        }
    }

    /// Whether a commit returns only after the data is on disk.
    public enum Durability: Sendable, Hashable {
        /// Every commit is flushed with `fdatasync` before it returns: an acknowledged write survives a crash.
        case full
        /// `MDB_NOSYNC`: commits return before the flush; a crash (of the machine, not the process)
        /// can lose recent commits or, on some file systems, corrupt the file. Tests and benchmarks only.
        case noSync
    }
}

extension LMDBEnvironment.Options {
    /// The map sizes this process will actually use, rounded to whole OS pages so that doubling
    /// keeps them page-aligned as `mdb_env_set_mapsize` expects.
    var pageAlignedSizes: (initial: Int, maximum: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let initial = max(roundUp(mapSize, to: page), page * 4)
        let maximum = max(roundUp(maxMapSize, to: page), initial)
        return (initial, maximum)
    }

    /// The permissions for a directory created to hold the files: each read bit gains its execute bit.
    var directoryMode: mode_t {
        fileMode | ((fileMode & 0o444) >> 2)
    }

    /// The `mdb_env_open` flags. `MDB_NOTLS` always: read transactions belong to the scoped call,
    /// not to a thread, so they work on thread pools and a thread may hold several.
    var environmentFlags: UInt32 {
        var flags = UInt32(MDB_NOTLS)
        if readOnly { flags |= UInt32(MDB_RDONLY) }
        if durability == .noSync { flags |= UInt32(MDB_NOSYNC) }
        return flags
    }

    private func roundUp(_ value: Int, to page: Int) -> Int {
        let clamped = max(value, page)
        let (sum, overflow) = clamped.addingReportingOverflow(page - 1)
        return overflow ? Int.max / page * page : sum / page * page
    }
}
