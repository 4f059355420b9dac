#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells systemd about the daemon's state (`sd_notify`), for units with `Type=notify`.
///
/// The protocol is one datagram of `KEY=VALUE` lines to the Unix socket named by
/// `$NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace). Without that variable (not run
/// by systemd, or by a unit of another type) every call does nothing and returns `false`.
///
/// `reeld` sends ``ready(status:)`` once the socket is bound and accepting, and ``stopping()``
/// when graceful shutdown begins; systemd then knows when clients can connect, and `systemctl
/// start` returns only then.
public struct SystemdNotifier: Sendable {
    /// `$NOTIFY_SOCKET`, if set.
    public let socketPath: String?

    /// - Parameter environment: the process environment (`ProcessInfo.processInfo.environment`).
    public init(environment: [String: String]) {
        let path = environment["NOTIFY_SOCKET"] ?? ""
        socketPath = path.isEmpty ? nil : path
    }

    /// Whether systemd is listening.
    public var isEnabled: Bool { socketPath != nil }

    /// `READY=1`: startup is complete.
    @discardableResult
    public func ready(status: String? = nil) -> Bool {
        notify(["READY=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    /// `STOPPING=1`: graceful shutdown has begun.
    @discardableResult
    public func stopping(status: String? = nil) -> Bool {
        notify(["STOPPING=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    /// Sends one datagram with these `KEY=VALUE` assignments.
    ///
    /// - Returns: `true` if it was sent; `false` without `$NOTIFY_SOCKET` or when sending failed
    ///   (systemd then times the unit out, which is the right outcome for a daemon it cannot hear).
    @discardableResult
    public func notify(_ assignments: [String]) -> Bool {
        guard let socketPath, var address = UnixSocketAddress(socketPath, abstractWithAt: true) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = message.withUnsafeBytes { buffer in
            address.withSockaddr { sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
        return sent == message.count
    }
}
