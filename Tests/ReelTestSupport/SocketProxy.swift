#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A Unix socket that forwards each connection to another one (a daemon's), and lets a test
/// decide what gets through: it can hold the daemon's lines back from the client, cut every
/// connection without passing on what was held, and refuse new connections for a while. A client
/// pointed at the proxy then meets, on demand, what a crash does to it: answers and updates the
/// daemon produced but never delivered, and a daemon that is away while others use it.
///
/// It also counts what crosses it, so a test can see from the outside what a client sent (a
/// retried request, say) without trusting the client's own account.
///
/// Each connection is served by a thread of its own with `poll`, so nothing blocks the
/// cooperative pool.
public final class SocketProxy: @unchecked Sendable {
    // @unchecked: every mutable member is behind `lock`.
    public let path: String
    private let upstream: String
    private let listener: Int32
    private let lock = NSLock()
    private var holding = false
    private var refusing = false
    private var pausing = false
    private var epoch = 0
    private var stopped = false
    private var live = 0
    private var requests: [String] = []
    private var replies = 0

    /// Listens at `path` and forwards each connection to the socket at `upstream`, connecting to
    /// it when the client connects (a client is closed at once when nothing listens there).
    public init(listeningAt path: String, forwardingTo upstream: String) throws {
        self.path = path
        self.upstream = upstream
        listener = try Self.listen(at: path)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops passing the daemon's lines to clients (they stay unread in the socket), or resumes.
    public func holdReplies(_ hold: Bool) { lock.withLock { holding = hold } }

    /// Closes each new connection as soon as it is accepted, or stops doing so.
    public func refuseConnections(_ refuse: Bool) { lock.withLock { refusing = refuse } }

    /// Stops accepting connections: new ones wait in the listening socket's backlog (connected,
    /// their first lines unread) until accepting resumes; or resumes. A daemon that is away
    /// without a client noticing anything but silence.
    public func pauseAccepting(_ pause: Bool) { lock.withLock { pausing = pause } }

    /// Cuts every connection, both sides, without passing on anything held, and waits until all
    /// are closed.
    public func dropConnections() async throws {
        lock.withLock { epoch += 1 }
        try await waitUntil("the proxy to close its connections", timeout: .seconds(10)) { liveConnections == 0 }
    }

    /// Every line clients sent through the proxy so far, in order (across connections).
    public var requestLines: [String] { lock.withLock { requests } }

    /// How many lines the proxy passed from the daemon to clients.
    public var replyCount: Int { lock.withLock { replies } }

    /// Connections open through the proxy now.
    public var liveConnections: Int { lock.withLock { live } }

    /// Stops listening and closes every connection. (The proxy's threads keep it alive until then.)
    public func stop() {
        lock.withLock { stopped = true }
    }

    private func acceptLoop() {
        defer {
            close(listener)
            unlink(path)
        }
        while !lock.withLock({ stopped }) {
            if lock.withLock({ pausing }) {
                usleep(5_000)
                continue
            }
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            if lock.withLock({ refusing }) {
                close(client)
                continue
            }
            guard let server = try? Self.connect(to: upstream) else {
                close(client)
                continue
            }
            let myEpoch = lock.withLock { live += 1; return epoch }
            Thread.detachNewThread { [self] in
                pump(client: client, server: server, epoch: myEpoch)
            }
        }
    }

    /// Forwards both ways until either side closes, or the proxy cuts the connection.
    private func pump(client: Int32, server: Int32, epoch myEpoch: Int) {
        defer {
            close(client)
            close(server)
            lock.withLock { live -= 1 }
        }
        var partial: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let (cut, hold) = lock.withLock { (stopped || epoch != myEpoch, holding) }
            if cut { return }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: hold ? 0 : Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 20) > 0 else { continue }
            // Checked again: a cut that came while polling must not let a held line through.
            let (cutNow, holdNow) = lock.withLock { (stopped || epoch != myEpoch, holding) }
            if cutNow { return }
            if fds[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return }
                let bytes = buffer[0..<count]
                var lines: [String] = []
                for byte in bytes {
                    if byte == UInt8(ascii: "\n") {
                        lines.append(String(decoding: partial, as: UTF8.self))
                        partial = []
                    } else {
                        partial.append(byte)
                    }
                }
                if !lines.isEmpty { lock.withLock { requests += lines } }
                guard Self.sendAll(Array(bytes), to: server) else { return }
            }
            if !holdNow && fds[1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return }
                let bytes = Array(buffer[0..<count])
                let newlines = bytes.filter { $0 == UInt8(ascii: "\n") }.count
                guard Self.sendAll(bytes, to: client) else { return }
                lock.withLock { replies += newlines }
            } else if holdNow && fds[1].revents & Int16(POLLHUP | POLLERR) != 0 {
                usleep(5_000)  // the daemon is gone and nothing is to be read: do not spin on it
            }
        }
    }

    private static func sendAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    private static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw SpawnError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: bytes)
            sunPath[bytes.count] = 0
        }
        return address
    }

    private static func listen(at path: String) throws -> Int32 {
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SpawnError("socket: \(String(cString: strerror(errno)))") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SpawnError("listen on \(path): \(reason)")
        }
        return fd
    }

    private static func connect(to path: String) throws -> Int32 {
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SpawnError("socket: \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw SpawnError("connect \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }
}
