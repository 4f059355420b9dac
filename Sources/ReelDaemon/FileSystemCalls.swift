#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file calls the daemon's startup needs, with `errno` kept for messages.
enum FileSystemCalls {
    /// A failed call: its `errno` and what was being done.
    struct Failure: Error {
        var errno: Int32
        var reason: String { errnoDescription(errno) }
    }

    /// `stat` (following symlinks), or `nil` when nothing is there.
    static func status(_ path: String, followSymlinks: Bool = true) throws(Failure) -> stat? {
        var info = stat()
        let result = followSymlinks ? stat(path, &info) : lstat(path, &info)
        if result == 0 { return info }
        if errno == ENOENT { return nil }
        throw Failure(errno: errno)
    }

    /// Reads a whole regular file.
    static func readFile(_ path: String, limit: Int = 1 << 20) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(errno: errno) }
        defer { close(fd) }
        return try readToEnd(fd, limit: limit)
    }

    /// Reads from the current offset of `fd` to its end, at most `limit` bytes.
    static func readToEnd(_ fd: Int32, limit: Int) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(errno: errno)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        return bytes
    }

    /// Creates `path` and any missing parents. Parents get 0755 (less the umask), as with
    /// `mkdir -p`; the last directory gets exactly `mode` (umask notwithstanding) and `group`.
    /// - Returns: `true` if the directory was created, `false` if it was already there.
    @discardableResult
    static func makeDirectory(_ path: String, mode: UInt32, group: UInt32?, exactMode: Bool = true) throws(Failure) -> Bool {
        if try status(path) != nil { return false }
        let parent = parentDirectory(of: path)
        if parent != path, try status(parent) == nil {
            try makeDirectory(parent, mode: 0o755, group: nil, exactMode: false)
        }
        if mkdir(path, mode_t(mode)) != 0 {
            if errno == EEXIST { return false }
            throw Failure(errno: errno)
        }
        if exactMode, chmod(path, mode_t(mode)) != 0 { throw Failure(errno: errno) }
        if let group, chown(path, uid_t.max, gid_t(group)) != 0 { throw Failure(errno: errno) }
        return true
    }

    /// The directory part of a path: `.` for a bare name, `/` for a name in the root.
    static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        if slash == trimmed.startIndex { return "/" }
        return String(trimmed[..<slash])
    }
}

extension stat {
    var isDirectory: Bool { st_mode & S_IFMT == S_IFDIR }
    var isSocket: Bool { st_mode & S_IFMT == S_IFSOCK }
    var isRegularFile: Bool { st_mode & S_IFMT == S_IFREG }
    /// The permission bits, `0o7777` at most.
    var permissions: UInt32 { UInt32(st_mode) & 0o7777 }
}

/// `0750` for messages.
func octal(_ mode: UInt32) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
