import Foundation
import Synchronization

/// Plays systemd's part for `sd_notify`: a datagram socket whose path goes in `$NOTIFY_SOCKET`,
/// keeping every message sent to it (each a list of `KEY=VALUE` lines).
///
/// Its descriptor is closed only once the thread reading it has ended: closed under a thread still
/// blocked in `recv`, the number went to the next test's listener, whose messages the old thread
/// then took (one test in a run waited 20 s for a `READY=1` sent to it).
public final class NotifyListener: Sendable {
    public let path: String
    private let descriptor: Int32
    private final class Inbox: Sendable {
        let messages = Mutex<[(time: ContinuousClock.Instant, lines: [String])]>([])
        let stopping = Atomic<Bool>(false)
        let ended = DispatchSemaphore(value: 0)
    }
    private let inbox = Inbox()

    public init(path: String) throws {
        self.path = path
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw SpawnError("cannot bind \(path): errno \(errno)")
        }
        let inbox = self.inbox
        Thread.detachNewThread {
            defer { inbox.ended.signal() }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Polled with a timeout, so that the thread sees it is to stop without relying on
            // what a `shutdown` does to a blocked `recv`.
            while !inbox.stopping.load(ordering: .acquiring) {
                guard poll(&waiting, 1, 50) > 0 else { continue }  // nothing yet, or interrupted
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                guard count >= 0 else { continue }  // interrupted, or taken already
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                inbox.messages.withLock { $0.append((.now, text.split(separator: "\n").map(String.init))) }
            }
        }
    }

    /// Every message so far, oldest first.
    public var messages: [[String]] { inbox.messages.withLock { $0.map(\.lines) } }

    /// How many messages so far carry `line` (such as `WATCHDOG=1`).
    public func count(_ line: String) -> Int { inbox.messages.withLock { $0.filter { $0.lines.contains(line) }.count } }

    /// When the last message carrying `line` came.
    public func lastTime(of line: String) -> ContinuousClock.Instant? {
        inbox.messages.withLock { $0.last { $0.lines.contains(line) }?.time }
    }

    /// The `STATUS=` values so far, oldest first.
    public var statuses: [String] {
        messages.flatMap { $0 }.filter { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst("STATUS=".count)) }
    }

    deinit {
        inbox.stopping.store(true, ordering: .releasing)
        inbox.ended.wait()
        close(descriptor)
    }
}
