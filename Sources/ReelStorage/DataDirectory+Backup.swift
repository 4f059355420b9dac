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
    /// The size of the copy's data file.
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
    /// - Parameter destination: A directory that does not exist yet, or an empty one.
    /// - Throws: ``StorageError`` `.invalidWrite` when `destination` exists and is not an empty
    ///   directory, `.io` or `.full` when the copy fails.
    @discardableResult
    public func backup(to destination: String) throws(StorageError) -> BackupReport {
        try Self.prepareOwnerOnlyDirectory(destination)
        do {
            try env.copy(to: destination, compact: true)
        } catch {
            throw Self.wrap(error, "backup to \(destination) failed")
        }
        let dataFile = destination + "/data.mdb"
        guard chmod(dataFile, 0o600) == 0 else {
            throw StorageError(.io, "backup to \(destination): cannot make \(dataFile) owner-only: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        let bytes = stat(dataFile, &info) == 0 ? Int64(info.st_size) : 0
        let copy = try DataDirectory(path: destination, reducerName: nil, options: Options(readOnly: true))
        return BackupReport(path: destination, seq: try copy.latestSeq(), bytes: bytes)
    }

    /// Creates `path` with mode 0700, or takes an existing empty directory and sets it to 0700.
    static func prepareOwnerOnlyDirectory(_ path: String) throws(StorageError) {
        if mkdir(path, 0o700) == 0 { return }
        let code = errno
        guard code == EEXIST else {
            throw StorageError(.io, "cannot create \(path): \(String(cString: strerror(code)))")
        }
        guard let entries = opendir(path) else {
            throw StorageError(.invalidWrite, "\(path) exists and is not a directory: choose a new path for the backup")
        }
        defer { closedir(entries) }
        while let entry = readdir(entries) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." {
                throw StorageError(.invalidWrite, "\(path) is not empty: a backup goes into a new or empty directory")
            }
        }
        guard chmod(path, 0o700) == 0 else {
            throw StorageError(.io, "cannot make \(path) owner-only: \(String(cString: strerror(errno)))")
        }
    }
}
