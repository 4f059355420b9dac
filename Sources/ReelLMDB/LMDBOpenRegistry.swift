import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The environments this process has open, by the identity of their directory.
///
/// LMDB must not open one environment twice in a process: its locks are POSIX `fcntl` locks,
/// which belong to the process and are all released when any descriptor of the file is closed,
/// so closing a second handle would silently unlock the first. Paths are compared by device and
/// inode, so `data`, `./data` and a symlink to it are the same environment.
enum LMDBOpenRegistry {
    struct Identity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    private static let open = Mutex<Set<Identity>>([])

    /// Records `path` as open, or throws `EBUSY` when it already is.
    static func register(_ path: String) throws(LMDBError) -> Identity {
        var info = stat()
        guard stat(path, &info) == 0 else { throw LMDBError.posix("stat", path: path) }
        let identity = Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        let inserted = open.withLock { $0.insert(identity).inserted }
        guard inserted else {
            throw LMDBError(
                code: .busy, operation: "mdb_env_open",
                detail: "\(path) is already open in this process; share that LMDBEnvironment instead")
        }
        return identity
    }

    /// Forgets an environment closed (or never opened) by its owner.
    static func unregister(_ identity: Identity) {
        _ = open.withLock { $0.remove(identity) }
    }
}
