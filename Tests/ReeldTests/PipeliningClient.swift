#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReelTestSupport
import Synchronization

/// One connection on a plain POSIX socket that writes a prepared stream of request lines as fast
/// as the daemon takes them, and reads every line until the daemon closes the connection.
///
/// Not ``TestConnection`` (NIO), on purpose: a shutdown test must know exactly how many request
/// bytes reached the socket, keep reading after a write fails (a closing daemon makes writes fail
/// with `EPIPE`), and never lose a line the daemon sent before closing. NIO closes a channel on a
/// failed write and reads what is left only if its inbound side happens to want more, which
/// would make answers vanish on the client's side and the test flaky. This client runs on its
/// own thread, so blocking in `poll` takes nothing from the cooperative pool.
enum PipeliningClient {
    struct Outcome: Sendable {
        /// How many bytes of the request stream went into the socket.
        var bytesWritten: Int
        /// Every line the daemon sent, in order, without the newline.
        var lines: [[UInt8]]
        /// How reading ended: `"eof"`, or the `errno` description (`ECONNRESET` is normal when the
        /// daemon closes with requests it did not read).
        var ending: String
    }

    /// Connects to `socketPath`, writes `requests`, reads until the daemon closes, and counts each
    /// line received in `received` as it arrives.
    ///
    /// - Parameter endingInput: once every request is written, shut the socket's write side down
    ///   (what Ctrl-D does in `socat`), and go on reading.
    /// - Throws: ``SpawnError`` when connecting fails, or when the daemon keeps the connection
    ///   open longer than `timeout`.
    static func run(
        socketPath: String, requests: [UInt8], endingInput: Bool = false, received: LineCounter = LineCounter(),
        timeout: Duration = .seconds(60)
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try exchange(socketPath, requests, endingInput, received, timeout) })
            }
            thread.start()
        }
    }

    /// Opens connections one after the other, as fast as it can, keeping the last 64 open, until
    /// a connection is refused (nothing listens any more) or `limit` is reached; counts each in
    /// `connected`. Returns whether it ended refused, and how many connections it made.
    static func connectUntilRefused(
        socketPath: String, connected: LineCounter, limit: Int = 100_000
    ) async -> (refused: Bool, connections: Int) {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                var open: [Int32] = []
                var made = 0
                var refused = false
                while made < limit {
                    guard let fd = try? connect(to: socketPath) else {
                        refused = true
                        break
                    }
                    made += 1
                    connected.increment()
                    open.append(fd)
                    if open.count > 64 { close(open.removeFirst()) }
                }
                open.forEach { close($0) }
                continuation.resume(returning: (refused, made))
            }
            thread.start()
        }
    }

    private static func exchange(
        _ socketPath: String, _ requests: [UInt8], _ endingInput: Bool, _ received: LineCounter, _ timeout: Duration
    ) throws -> Outcome {
        let fd = try connect(to: socketPath)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        if requests.isEmpty && endingInput { shutdown(fd, Int32(SHUT_WR)) }

        var outcome = Outcome(bytesWritten: 0, lines: [], ending: "")
        var writing = !requests.isEmpty
        var partial: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = ContinuousClock.now + timeout
        while true {
            guard ContinuousClock.now < deadline else {
                throw SpawnError("the daemon kept the connection open for more than \(timeout)")
            }
            var events = Int16(POLLIN)
            if writing { events |= Int16(POLLOUT) }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }

            if writing && descriptor.revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 {
                let sent = requests.withUnsafeBytes { bytes in
                    send(fd, bytes.baseAddress! + outcome.bytesWritten, min(bytes.count - outcome.bytesWritten, 4096), Int32(MSG_NOSIGNAL))
                }
                if sent > 0 {
                    outcome.bytesWritten += sent
                    writing = outcome.bytesWritten < requests.count
                    if !writing && endingInput { shutdown(fd, Int32(SHUT_WR)) }
                } else if sent < 0 && errno != EAGAIN && errno != EINTR {
                    writing = false  // the daemon closed its end; keep reading what it sent before
                }
            }
            if descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count == 0 {
                    outcome.ending = "eof"
                    break
                }
                if count < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    outcome.ending = String(cString: strerror(errno))
                    break
                }
                for byte in buffer[0..<count] {
                    if byte == UInt8(ascii: "\n") {
                        outcome.lines.append(partial)
                        partial = []
                        received.increment()
                    } else {
                        partial.append(byte)
                    }
                }
            }
        }
        return outcome
    }

    /// A connected, blocking socket; the caller closes it.
    static func connect(to path: String) throws -> Int32 {
        try RawSocket.connectUnix(path)
    }
}

/// Lines received so far by all the clients of a test, read by the test while they run.
final class LineCounter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}
