import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Gets the socket path ready for `bind`, and the bound socket's permissions right.
///
/// Call ``prepare()`` after taking the ``DataDirectoryLock`` (so that two starting daemons cannot
/// both decide that a socket is stale) and before binding:
/// - the socket's directory is created if missing, with the mode and group of
///   ``SocketPermissions`` (`0700`, or `0750` and the group when shared). An existing directory
///   must belong to the daemon's user or to root and must not be world-writable (so nobody else
///   can replace the socket with their own); with a socket group it must let that group in.
///   An existing directory's mode is never changed: it may be someone's home.
/// - a file already at the socket path: if a `connect` to it succeeds, a live daemon owns it and it
///   is never unlinked (``StartupError/Code/socketInUse``); if the connection is refused, it is a
///   stale socket left by a daemon that died, and it is removed; anything that is not a socket is
///   refused.
///
/// After `bind`, the server calls ``applySocketPermissions(path:)``; at a clean exit,
/// ``removeSocket()``.
public final class SocketPlacement: Sendable {
    /// What ``prepare()`` found.
    public enum Outcome: Sendable, Equatable {
        /// Nothing was at the socket path.
        case free
        /// A stale socket (connection refused) was at the path and has been removed.
        case removedStaleSocket
    }

    /// The socket path.
    public let path: String
    /// Modes and group for the socket and its directory.
    public let permissions: SocketPermissions
    /// The directory that holds the socket.
    public var directory: String { FileSystemCalls.parentDirectory(of: path) }
    /// Device and inode of the socket this daemon bound, once its permissions are applied.
    private let bound = Mutex<(dev: UInt64, ino: UInt64)?>(nil)

    /// - Parameters:
    ///   - path: where the socket will be bound.
    ///   - permissions: modes and group for the socket and a directory created for it.
    public init(path: String, permissions: SocketPermissions) {
        self.path = path
        self.permissions = permissions
    }

    /// The configuration's socket path and permissions.
    public convenience init(configuration: DaemonConfiguration) {
        self.init(path: configuration.socketPath, permissions: configuration.socketPermissions)
    }

    /// Prepares the directory and clears the path; see ``SocketPlacement``.
    ///
    /// - Throws: ``StartupError``: `.socketInUse` (a live daemon answers), `.unsafePermissions`
    ///   (directory world-writable, owned by another user, or closed to the socket group; a
    ///   non-socket file at the path), `.io`.
    @discardableResult
    public func prepare() throws(StartupError) -> Outcome {
        try prepareDirectory()
        return try clearPath()
    }

    private func prepareDirectory() throws(StartupError) {
        let directory = directory
        let created: Bool
        do {
            created = try FileSystemCalls.makeDirectory(directory, mode: permissions.directoryMode, group: permissions.groupID)
        } catch {
            throw StartupError(.io, "cannot create the socket directory \(directory): \(error.reason)", underlying: error)
        }
        if created { return }
        let info: stat
        do {
            guard let found = try FileSystemCalls.status(directory) else {
                throw StartupError(.io, "the socket directory \(directory) disappeared while reeld was starting")
            }
            info = found
        } catch let error as StartupError {
            throw error
        } catch {
            throw StartupError(.io, "cannot inspect the socket directory \(directory): \((error as! FileSystemCalls.Failure).reason)")
        }
        guard info.isDirectory else {
            throw StartupError(.io, "the socket's directory \(directory) is not a directory")
        }
        let ownUID = UInt32(geteuid())
        if UInt32(info.st_uid) != ownUID && info.st_uid != 0 {
            throw StartupError(
                .unsafePermissions,
                "the socket directory \(directory) belongs to uid \(info.st_uid), not to reeld's user (uid \(ownUID)) or root; "
                    + "choose a --socket in a directory of reeld's user"
            )
        }
        if info.permissions & 0o002 != 0 {
            throw StartupError(
                .unsafePermissions,
                "the socket directory \(directory) is world-writable (mode \(octal(info.permissions))), so anyone could replace "
                    + "the socket; choose a --socket in a directory only reeld's user can write, such as the data directory"
            )
        }
        if let gid = permissions.groupID {
            let groupCanEnter = (UInt32(info.st_gid) == gid && info.permissions & 0o010 != 0) || info.permissions & 0o001 != 0
            if !groupCanEnter {
                throw StartupError(
                    .unsafePermissions,
                    "the socket directory \(directory) (mode \(octal(info.permissions)), group \(info.st_gid)) does not let "
                        + "\(permissions.groupLabel) reach the socket; run `chgrp \(permissions.groupName ?? String(gid)) \(directory) "
                        + "&& chmod 0750 \(directory)`, or choose a --socket in a directory reeld creates"
                )
            }
        }
    }

    private func clearPath() throws(StartupError) -> Outcome {
        let existing: stat?
        do {
            existing = try FileSystemCalls.status(path, followSymlinks: false)
        } catch {
            throw StartupError(.io, "cannot inspect the socket path \(path): \(error.reason)", underlying: error)
        }
        guard let existing else { return .free }
        guard existing.isSocket else {
            throw StartupError(
                .unsafePermissions, "\(path) exists and is not a socket; remove it, or choose another --socket"
            )
        }
        switch SocketProbe.probe(path) {
        case .accepted, .busy:
            throw StartupError(
                .socketInUse, "socket \(path) is in use by a live daemon; stop it first, or choose another --socket"
            )
        case .refused:
            if unlink(path) != 0 && errno != ENOENT {
                let code = errno
                throw StartupError(.io, "cannot remove the stale socket \(path): \(errnoDescription(code))")
            }
            return .removedStaleSocket
        case .gone:
            return .free
        case .failed(let code):
            throw StartupError(
                .io, "cannot tell whether socket \(path) belongs to a live daemon (connect: \(errnoDescription(code))); "
                    + "check it and remove it by hand if it is stale"
            )
        }
    }

    /// Gives the socket just bound at `path` its mode and group. `chmod` on the path, since a
    /// socket's own descriptor cannot change the file's mode; the window between `bind` and this
    /// call is covered by the directory's mode.
    ///
    /// - Parameter path: the bound socket; default: ``path``.
    /// - Throws: ``StartupError`` `.io`, or `.unsafePermissions` when the daemon's user cannot give
    ///   the socket to the configured group (it is not a member).
    public func applySocketPermissions(path: String? = nil) throws(StartupError) {
        let path = path ?? self.path
        if chmod(path, mode_t(permissions.socketMode)) != 0 {
            let code = errno
            throw StartupError(.io, "cannot set the mode of socket \(path) to \(octal(permissions.socketMode)): \(errnoDescription(code))")
        }
        if let gid = permissions.groupID, chown(path, uid_t.max, gid_t(gid)) != 0 {
            let code = errno
            throw StartupError(
                code == EPERM ? .unsafePermissions : .io,
                "cannot give socket \(path) to \(permissions.groupLabel): \(errnoDescription(code))"
                    + (code == EPERM ? " (reeld's user must be a member of the group)" : "")
            )
        }
        if let info = try? FileSystemCalls.status(path, followSymlinks: false) {
            bound.withLock { $0 = (UInt64(info.st_dev), UInt64(info.st_ino)) }
        }
    }

    /// Removes the socket at a clean exit, only if it is still the one this daemon bound (known
    /// from ``applySocketPermissions(path:)``). A socket left behind anyway is reclaimed as stale
    /// at the next start.
    public func removeSocket() {
        guard let identity = bound.withLock({ $0 }),
            let info = try? FileSystemCalls.status(path, followSymlinks: false),
            UInt64(info.st_dev) == identity.dev, UInt64(info.st_ino) == identity.ino
        else { return }
        unlink(path)
    }
}

/// One non-blocking `connect` to a Unix stream socket, to tell a live daemon from a stale socket.
enum SocketProbe {
    enum Result: Equatable {
        /// Something accepted the connection: a live daemon.
        case accepted
        /// The listener's backlog is full (`EAGAIN`): a live, busy daemon.
        case busy
        /// `ECONNREFUSED`: nobody listens; the socket file is stale.
        case refused
        /// The file vanished meanwhile.
        case gone
        /// Anything else, such as `EACCES`: cannot tell.
        case failed(Int32)
    }

    static func probe(_ path: String) -> Result {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failed(errno) }
        defer { close(fd) }
        guard var address = UnixSocketAddress(path) else { return .failed(ENAMETOOLONG) }
        let result = address.withSockaddr { connect(fd, $0, $1) }
        if result == 0 { return .accepted }
        switch errno {
        case ECONNREFUSED: return .refused
        case EAGAIN, EINPROGRESS: return .busy
        case ENOENT: return .gone
        case let code: return .failed(code)
        }
    }
}

/// A `sockaddr_un` for a path, or for a name in Linux's abstract namespace.
struct UnixSocketAddress {
    private var storage = sockaddr_un()
    private let length: socklen_t

    /// - Parameters:
    ///   - path: the socket's path.
    ///   - abstractWithAt: a leading `@` names a socket in the abstract namespace (as
    ///     `$NOTIFY_SOCKET` writes it), not a file.
    init?(_ path: String, abstractWithAt: Bool = false) {
        var bytes = Array(path.utf8)
        let abstract = abstractWithAt && bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        length = socklen_t(offset + bytes.count + (abstract ? 0 : 1))
    }

    mutating func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        let length = length
        return withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
