import CReelLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one error type of ReelLMDB: a failure reported by LMDB or by the operating system under it.
///
/// "Not found" is never an error in this module; lookups return `nil` or `false` instead.
/// Match on ``code`` to react to a particular failure:
///
/// ```swift
/// catch let error as LMDBError where error.code == .mapFull { ... }
/// ```
public struct LMDBError: Error, Sendable, CustomStringConvertible {
    /// The LMDB return code (negative, `MDB_*`) or the `errno` value (positive) behind the failure.
    public let code: Code
    /// The C function (or the step of ReelLMDB) that failed, for example `"mdb_txn_commit"`.
    public let operation: String
    /// LMDB's own text for ``code``, from `mdb_strerror` (which falls back to `strerror`).
    public let message: String
    /// What ReelLMDB knows beyond the code: the path involved, the limit hit, what to do next.
    public let detail: String?

    /// Creates an error; ReelLMDB makes these itself, the initializer exists for tests and adapters.
    /// - Parameters:
    ///   - code: the LMDB or `errno` code.
    ///   - operation: the function that failed.
    ///   - detail: optional context for a person reading the error.
    public init(code: Code, operation: String, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.message = String(cString: mdb_strerror(code.rawValue))
        self.detail = detail
    }

    /// `operation: NAME (code): message; detail`, e.g.
    /// `mdb_txn_commit: MDB_MAP_FULL (-30792): MDB_MAP_FULL: Environment mapsize limit reached`.
    public var description: String {
        var text = "\(operation): \(code) (\(code.rawValue)): \(message)"
        if let detail { text += "; \(detail)" }
        return text
    }
}

extension LMDBError {
    /// An LMDB or `errno` result code, with LMDB's constants as named values.
    ///
    /// An open set: any `Int32` is representable, so codes ReelLMDB has no name for still round-trip.
    /// Compare with `==` or `switch` over the static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The raw C value: negative for LMDB's own codes, positive for `errno` values.
        public let rawValue: Int32

        /// Wraps a raw LMDB or `errno` value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `MDB_KEYEXIST`: the key is already present (also returned for an out-of-order `MDB_APPEND`).
        public static let keyExists = Code(rawValue: MDB_KEYEXIST)
        /// `MDB_NOTFOUND`: never thrown by ReelLMDB's lookups, which return `nil` instead.
        public static let notFound = Code(rawValue: MDB_NOTFOUND)
        /// `MDB_PAGE_NOTFOUND`: a requested page is missing; the file is likely damaged.
        public static let pageNotFound = Code(rawValue: MDB_PAGE_NOTFOUND)
        /// `MDB_CORRUPTED`: a located page has the wrong type.
        public static let corrupted = Code(rawValue: MDB_CORRUPTED)
        /// `MDB_PANIC`: an earlier fatal error left the environment unusable; close it.
        public static let panic = Code(rawValue: MDB_PANIC)
        /// `MDB_VERSION_MISMATCH`: the file was made by an incompatible LMDB version.
        public static let versionMismatch = Code(rawValue: MDB_VERSION_MISMATCH)
        /// `MDB_INVALID`: the file is not an LMDB data file.
        public static let invalid = Code(rawValue: MDB_INVALID)
        /// `MDB_MAP_FULL`: the memory map is full; writes grow it up to `Options.maxMapSize`.
        public static let mapFull = Code(rawValue: MDB_MAP_FULL)
        /// `MDB_DBS_FULL`: more named databases than `Options.maxDatabases`.
        public static let databasesFull = Code(rawValue: MDB_DBS_FULL)
        /// `MDB_READERS_FULL`: every reader slot is taken (`Options.maxReaders`).
        public static let readersFull = Code(rawValue: MDB_READERS_FULL)
        /// `MDB_TXN_FULL`: the write transaction has too many dirty pages; split the work.
        public static let transactionFull = Code(rawValue: MDB_TXN_FULL)
        /// `MDB_CURSOR_FULL`: internal cursor stack overflow (a very deep tree).
        public static let cursorFull = Code(rawValue: MDB_CURSOR_FULL)
        /// `MDB_PAGE_FULL`: internal page has no room.
        public static let pageFull = Code(rawValue: MDB_PAGE_FULL)
        /// `MDB_MAP_RESIZED`: another process grew the map beyond this one's mapping.
        public static let mapResized = Code(rawValue: MDB_MAP_RESIZED)
        /// `MDB_INCOMPATIBLE`: the operation does not fit the database's flags, or a name is not a database.
        public static let incompatible = Code(rawValue: MDB_INCOMPATIBLE)
        /// `MDB_BAD_RSLOT`: a reader slot was misused.
        public static let badReaderSlot = Code(rawValue: MDB_BAD_RSLOT)
        /// `MDB_BAD_TXN`: the transaction had an earlier error and can only be aborted.
        public static let badTransaction = Code(rawValue: MDB_BAD_TXN)
        /// `MDB_BAD_VALSIZE`: a key is empty or longer than the maximum key size (511 bytes by default).
        public static let badValueSize = Code(rawValue: MDB_BAD_VALSIZE)
        /// `MDB_BAD_DBI`: the database handle was closed or changed.
        public static let badDatabase = Code(rawValue: MDB_BAD_DBI)

        /// `ENOSPC`: the disk is full.
        public static let noSpace = Code(rawValue: ENOSPC)
        /// `EACCES`: permission denied, or a write attempted on a read-only environment.
        public static let accessDenied = Code(rawValue: EACCES)
        /// `EIO`: an I/O error, typically from `fsync`; see ``LMDBEnvironment/fatalWriteError``.
        public static let ioError = Code(rawValue: EIO)
        /// `EINVAL`: an invalid argument or state.
        public static let invalidArgument = Code(rawValue: EINVAL)
        /// `ENOENT`: the path does not exist.
        public static let noSuchFile = Code(rawValue: ENOENT)
        /// `EEXIST`: the file exists (for example the target of a copy).
        public static let fileExists = Code(rawValue: EEXIST)
        /// `EBUSY`: the environment is already open in this process.
        public static let busy = Code(rawValue: EBUSY)
        /// `ENOMEM`: out of memory or address space (for example while mapping a larger map).
        public static let outOfMemory = Code(rawValue: ENOMEM)
        /// `EROFS`: the file system is read-only.
        public static let readOnlyFileSystem = Code(rawValue: EROFS)
        /// `EDQUOT`: the disk quota is exhausted.
        public static let quotaExceeded = Code(rawValue: EDQUOT)

        /// Whether this is one of LMDB's own codes rather than an `errno` value.
        public var isLMDBCode: Bool { rawValue >= MDB_KEYEXIST && rawValue <= MDB_LAST_ERRCODE }

        /// The C name, such as `MDB_MAP_FULL` or `ENOSPC`, or `code N` when ReelLMDB has no name for it.
        public var description: String {
            Self.names[rawValue] ?? "code \(rawValue)"
        }

        private static let names: [Int32: String] = [
            MDB_KEYEXIST: "MDB_KEYEXIST", MDB_NOTFOUND: "MDB_NOTFOUND",
            MDB_PAGE_NOTFOUND: "MDB_PAGE_NOTFOUND", MDB_CORRUPTED: "MDB_CORRUPTED", MDB_PANIC: "MDB_PANIC",
            MDB_VERSION_MISMATCH: "MDB_VERSION_MISMATCH", MDB_INVALID: "MDB_INVALID",
            MDB_MAP_FULL: "MDB_MAP_FULL", MDB_DBS_FULL: "MDB_DBS_FULL", MDB_READERS_FULL: "MDB_READERS_FULL",
            MDB_TLS_FULL: "MDB_TLS_FULL", MDB_TXN_FULL: "MDB_TXN_FULL", MDB_CURSOR_FULL: "MDB_CURSOR_FULL",
            MDB_PAGE_FULL: "MDB_PAGE_FULL", MDB_MAP_RESIZED: "MDB_MAP_RESIZED",
            MDB_INCOMPATIBLE: "MDB_INCOMPATIBLE", MDB_BAD_RSLOT: "MDB_BAD_RSLOT", MDB_BAD_TXN: "MDB_BAD_TXN",
            MDB_BAD_VALSIZE: "MDB_BAD_VALSIZE", MDB_BAD_DBI: "MDB_BAD_DBI",
            ENOSPC: "ENOSPC", EACCES: "EACCES", EIO: "EIO", EINVAL: "EINVAL", ENOENT: "ENOENT",
            EEXIST: "EEXIST", EBUSY: "EBUSY", ENOMEM: "ENOMEM", EROFS: "EROFS", EDQUOT: "EDQUOT",
            EAGAIN: "EAGAIN", EPERM: "EPERM", ENOTDIR: "ENOTDIR",
        ]
    }
}

// The single place where C result codes become Swift control flow. Every LMDB call in the module
// goes through `check` or `found`, so the success path is one compare and the failure path is out of line.
extension LMDBError {
    /// Throws unless `rc` is `MDB_SUCCESS`.
    @inline(__always)
    static func check(_ rc: Int32, _ operation: StaticString, detail: @autoclosure () -> String? = nil)
        throws(LMDBError)
    {
        if rc != MDB_SUCCESS { throw make(rc, operation, detail()) }
    }

    /// `true` on success, `false` for `MDB_NOTFOUND` (an answer, not a failure); throws otherwise.
    @inline(__always)
    static func found(_ rc: Int32, _ operation: StaticString) throws(LMDBError) -> Bool {
        if rc == MDB_SUCCESS { return true }
        if rc == MDB_NOTFOUND { return false }
        throw make(rc, operation, nil)
    }

    /// Builds the error for an `errno`-style failure of a libc call.
    static func posix(_ operation: StaticString, path: String) -> LMDBError {
        make(errno, operation, path)
    }

    @inline(never)
    static func make(_ rc: Int32, _ operation: StaticString, _ detail: String?) -> LMDBError {
        LMDBError(code: Code(rawValue: rc), operation: "\(operation)", detail: detail)
    }
}
