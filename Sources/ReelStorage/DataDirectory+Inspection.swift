#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a path given as a data directory is, before anything is opened or written there: `reeld`
/// creates a store only in a new or empty directory (or one holding nothing but what Reel itself
/// puts there), never among someone's files; `reel` tells a missing directory from one that is
/// not Reel's.
public enum DataDirectoryKind: Sendable, Equatable {
    /// Nothing at the path.
    case absent
    /// Something that is not a directory.
    case notADirectory
    /// A directory with nothing in it, or only files Reel makes (a lock, a socket, a journal).
    case empty
    /// A directory with a data file: a store (whose metadata the open then checks).
    case store
    /// A directory holding other things and no store; `entries` are some of their names, sorted.
    case foreign(entries: [String], count: Int)
}

extension DataDirectory {
    /// The names Reel's programs make in a data directory besides the data file: LMDB's lock,
    /// the journal, `reeld`'s lock and a creation cut short. A socket is allowed by its own name
    /// (see ``inspect(_:allowing:)``).
    public static let ownFileNames: Set<String> = ["lock.mdb", JournalFile.name, "reeld.lock", ".reel-creating"]

    /// Looks at `path` without changing anything.
    ///
    /// - Parameters:
    ///   - path: the data directory.
    ///   - allowing: more names that do not make a directory foreign (the daemon's socket, when
    ///     it lives in the data directory).
    /// - Throws: ``StorageError`` `.io` when the directory cannot be read.
    public static func inspect(_ path: String, allowing: Set<String> = []) throws(StorageError) -> DataDirectoryKind {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return .absent }
            if code == ENOTDIR { return .notADirectory }
            throw StorageError(.io, "cannot look at \(path): \(String(cString: strerror(code)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return .notADirectory }
        guard let names = entryNames(of: path) else {
            throw StorageError(.io, "cannot read the directory \(path): \(String(cString: strerror(errno)))")
        }
        if names.contains("data.mdb") { return .store }
        let others = names.filter { !ownFileNames.contains($0) && !allowing.contains($0) }
        guard !others.isEmpty else { return .empty }
        return .foreign(entries: Array(others.sorted().prefix(3)), count: others.count)
    }

    /// The names in the directory at `path`, without `.` and `..`; `nil`, with `errno` set, when
    /// it cannot be opened.
    static func entryNames(of path: String) -> [String]? {
        guard let entries = opendir(path) else { return nil }
        defer { closedir(entries) }
        var names: [String] = []
        while let entry = readdir(entries) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// "a.txt, b, c and 9 more", for messages about a foreign directory.
    public static func describe(entries: [String], count: Int) -> String {
        let listed = entries.joined(separator: ", ")
        return count > entries.count ? "\(listed) and \(count - entries.count) more" : listed
    }
}
