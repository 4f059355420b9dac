#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The little file-system work LMDB does not do itself.
enum LMDBFileSystem {
    /// `mkdir -p`: creates `path` and missing parents with `mode`; existing directories are fine.
    static func createDirectories(_ path: String, mode: mode_t) throws(LMDBError) {
        guard !path.isEmpty else {
            throw LMDBError(code: .invalidArgument, operation: "mkdir", detail: "the environment path is empty")
        }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw LMDBError.posix("mkdir", path: prefix)
            }
            prefix += "/"
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw LMDBError.posix("stat", path: path) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LMDBError(code: LMDBError.Code(rawValue: ENOTDIR), operation: "mkdir", detail: path)
        }
    }
}
