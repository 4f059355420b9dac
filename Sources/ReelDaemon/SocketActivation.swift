#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The listening socket systemd passes to a socket-activated `reeld` (`ops/reeld.socket`).
///
/// systemd binds the socket itself, with the unit's `SocketMode=`, `SocketUser=` and
/// `SocketGroup=`, starts `reeld` on the first connection (or at boot), and hands the socket over as
/// descriptor 3 with `LISTEN_FDS=1` and `LISTEN_PID` set to the daemon's pid (sd_listen_fds(3)).
/// Connections that arrive while the daemon opens its store wait in the socket's backlog.
///
/// The permissions model stays the daemon's: the socket must be a Unix stream socket bound to a
/// path (an abstract socket has no file mode, so anyone could reach it) whose mode is not
/// world-writable, and every connection's peer credentials still go through the allow lists.
/// The socket file is systemd's: the daemon neither changes its mode nor removes it at exit.
public struct SocketActivation: Sendable, Equatable {
    /// The descriptor passed (3, `SD_LISTEN_FDS_START`).
    public let descriptor: CInt
    /// The path the socket is bound to.
    public let path: String

    /// The first descriptor systemd passes.
    static let firstDescriptor: CInt = 3

    /// The socket passed by systemd, or `nil` when none is passed to this process (no
    /// `LISTEN_FDS`, or `LISTEN_PID` names another process, such as a parent that did not unset it).
    /// The `LISTEN_*` variables are removed from the environment, so that no child takes them for
    /// its own.
    ///
    /// - Throws: ``StartupError`` `.invalidSetting` when more than one socket or a socket of the
    ///   wrong kind is passed, `.unsafePermissions` when its file is world-writable.
    public static func adopt(environment: [String: String], pid: Int32 = getpid()) throws(StartupError) -> SocketActivation? {
        guard let count = environment["LISTEN_FDS"], let owner = environment["LISTEN_PID"], Int32(owner) == pid else {
            return nil
        }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        guard count == "1" else {
            throw StartupError(
                .invalidSetting,
                "systemd passed \(count) sockets (LISTEN_FDS); reeld serves one: give its .socket unit a single ListenStream="
            )
        }
        let descriptor = firstDescriptor
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        guard option(descriptor, SO_DOMAIN) == AF_UNIX, option(descriptor, SO_TYPE) == CInt(SOCK_STREAM.rawValue),
            option(descriptor, SO_ACCEPTCONN) == 1
        else {
            throw StartupError(
                .invalidSetting,
                "the socket systemd passed is not a listening Unix stream socket: use ListenStream=/path/to/reel.sock"
            )
        }
        guard let path = boundPath(descriptor) else {
            throw StartupError(
                .invalidSetting,
                "the socket systemd passed is not bound to a path (an abstract socket has no file mode to guard it): use ListenStream=/path/to/reel.sock"
            )
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw StartupError(.io, "cannot read the mode of the socket systemd passed, \(path): \(String(cString: strerror(errno)))")
        }
        if status.st_mode & S_IWOTH != 0 {
            throw StartupError(
                .unsafePermissions,
                "the socket systemd passed, \(path), is world-writable (mode 0\(String(status.st_mode & 0o7777, radix: 8))): "
                    + "set SocketMode=0600, or 0660 with SocketGroup="
            )
        }
        return SocketActivation(descriptor: descriptor, path: path)
    }

    private static func option(_ descriptor: CInt, _ name: CInt) -> CInt? {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
    }

    private static func boundPath(_ descriptor: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        let pathBytes = Int(length) - MemoryLayout<sa_family_t>.size
        guard named, address.sun_family == sa_family_t(AF_UNIX), pathBytes > 1 else { return nil }
        return withUnsafeBytes(of: &address.sun_path) { raw -> String? in
            guard raw[0] != 0 else { return nil }  // abstract
            return String(decoding: raw.prefix(pathBytes).prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
