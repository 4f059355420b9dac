#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a backup wrote.
public struct BackupReport: Sendable, Equatable {
    /// The backup's directory.
    public var path: String
    /// The latest seq in the copy: the copy is the store exactly as it was at this seq.
    public var seq: UInt64
    /// What the copy takes on disk, every file in it.
    public var bytes: Int64
}

extension DataDirectory {
    /// Writes a consistent, compact copy of the whole directory into `destination`, while writers
    /// (in this process or another) keep committing: the copy is the snapshot of one read
    /// transaction, with free pages left out.
    ///
    /// A data directory holds everything anyone ever dispatched, so the copy is readable by its
    /// owner only: the directory is created with mode 0700 before LMDB writes into it (so the data
    /// file is never reachable by others, whatever the umask), and the data file is set to 0600.
    /// The copy is then opened read-only to check it and to report its seq.
    ///
    /// - Parameter destination: A directory that does not exist yet (missing parents are made, as
    ///   `mkdir -p` makes them), or an empty one.
    /// - Throws: ``StorageError`` `.invalidWrite` when `destination` exists and is not an empty
    ///   directory, `.io` or `.full` when the copy fails.
    @discardableResult
    public func backup(to destination: String) throws(StorageError) -> BackupReport {
        let created = try Self.prepareOwnerOnlyDirectory(destination)
        do {
            return try copy(to: destination)
        } catch {
            // Leave the destination as it was found: a half-written copy is worse than none, and
            // would make the next attempt fail with "not empty".
            for name in ["data.mdb", "lock.mdb", JournalFile.name] { unlink(destination + "/" + name) }
            if created { rmdir(destination) }
            throw error
        }
    }

    private func copy(to destination: String) throws(StorageError) -> BackupReport {
        // The journal before LMDB: whatever the applier moves meanwhile is then in the LMDB copy,
        // and the copy's journal continues it (opening the copy moves the rest into LMDB).
        let journal = try JournalFile.contents(ofDirectory: path)
        do {
            try env.copy(to: destination, compact: true)
        } catch {
            throw Self.wrap(error, "backup to \(destination) failed")
        }
        let dataFile = destination + "/data.mdb"
        guard chmod(dataFile, 0o600) == 0 else {
            throw StorageError(.io, "backup to \(destination): cannot make \(dataFile) owner-only: \(String(cString: strerror(errno)))")
        }
        // Only the groups the LMDB copy lacks, written afresh from the start of a new file:
        // the source's journal is mostly zeros allocated ahead, which a backup has no use for.
        if let journal {
            let copied = try Self.loggedSeq(of: destination)
            let groups = try JournalFormat.unappliedGroups(in: journal, after: copied, path: path + "/" + JournalFile.name)
            if !groups.isEmpty {
                try Self.writeFile(destination + "/" + JournalFile.name, groups.flatMap(JournalFormat.encode))
            }
        }
        let copy = try DataDirectory(path: destination, reducerName: nil, options: Options(readOnly: true))
        return BackupReport(path: destination, seq: try copy.latestSeq(), bytes: Self.sizeOnDisk(ofDirectory: destination))
    }

    /// The last seq LMDB holds in the directory at `path` (which has no journal yet).
    private static func loggedSeq(of path: String) throws(StorageError) -> UInt64 {
        let copy = try DataDirectory(path: path, reducerName: nil, options: Options(readOnly: true))
        return try copy.latestSeq()
    }

    /// What the files directly in `path` take on disk (allocated blocks, not their length: a
    /// file allocated ahead takes its space whatever it holds).
    public static func sizeOnDisk(ofDirectory path: String) -> Int64 {
        var total: Int64 = 0
        for name in entryNames(of: path) ?? [] {
            var info = stat()
            if lstat(path + "/" + name, &info) == 0 { total += Int64(info.st_blocks) * 512 }
        }
        return total
    }

    /// Writes a new owner-only file and syncs it.
    private static func writeFile(_ path: String, _ bytes: [UInt8]) throws(StorageError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw JournalFile.error("cannot create \(path)") }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw JournalFile.error("cannot write \(path)") }
            done += count
        }
        guard fsync(fd) == 0 else { throw JournalFile.error("cannot sync \(path)") }
    }

    private static func makeParents(of path: String) {
        var parent = Substring(path)
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        guard let slash = parent.lastIndex(of: "/"), slash != parent.startIndex else { return }
        let directory = String(parent[..<slash])
        if mkdir(directory, 0o777) != 0 && errno == ENOENT {
            makeParents(of: directory)
            mkdir(directory, 0o777)
        }
    }

    /// Creates `path` with mode 0700, or takes an existing empty directory and sets it to 0700.
    ///
    /// - Returns: Whether the directory was created (and should be removed if the backup fails).
    /// - Throws: ``StorageError`` `.invalidWrite` for a destination the caller must change: its
    ///   parent cannot be made or written, it is not a directory, or not empty.
    static func prepareOwnerOnlyDirectory(_ path: String) throws(StorageError) -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        var code = errno
        if code == ENOENT {
            // Missing parents are made, as `mkdir -p` makes them (with the umask's modes).
            makeParents(of: path)
            if mkdir(path, 0o700) == 0 { return true }
            code = errno
        }
        guard code == EEXIST else {
            throw StorageError(.invalidWrite, "cannot create \(path): \(String(cString: strerror(code)))")
        }
        guard let names = entryNames(of: path) else {
            let reason = errno == ENOTDIR ? "it exists and is not a directory" : String(cString: strerror(errno))
            throw StorageError(.invalidWrite, "cannot back up into \(path): \(reason)")
        }
        guard names.isEmpty else {
            throw StorageError(.invalidWrite, "\(path) is not empty: a backup goes into a new or empty directory")
        }
        guard chmod(path, 0o700) == 0 else {
            throw StorageError(.invalidWrite, "cannot make \(path) owner-only: \(String(cString: strerror(errno)))")
        }
        return false
    }
}
