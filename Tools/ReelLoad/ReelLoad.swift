import ArgumentParser
import Foundation
import Histogram

/// Drives a running `reeld` the way `redis-benchmark` drives Redis, so the two can be compared in
/// one run: N connections, each keeping up to `pipeline` dispatches in flight, every one a `set`
/// of a payload of the given size. One thread and `poll(2)`, as redis-benchmark does, so the load
/// generator costs little CPU next to the server it measures.
///
/// Prints one JSON line: `{"requests", "errors", "seconds", "perSecond", "p50Ms", "p99Ms", "maxMs"}`.
@main
struct ReelLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reel-load",
        abstract: "Dispatch load over reeld's socket: connections × pipeline depth, with latency percentiles."
    )

    @Option(help: "The daemon's socket.") var socket: String
    @Option(help: "Connections, each its own peer.") var connections = 1
    @Option(help: "Dispatches in flight per connection.") var pipeline = 1
    @Option(help: "Bytes of the value each action sets.") var payloadBytes = 200
    @Option(help: "Dispatches in all (spread over the connections).") var requests = 10_000
    @Flag(help: "Give every dispatch an idempotency key (a retry-safe client).") var idempotencyKeys = false

    mutating func validate() throws {
        guard connections > 0, pipeline > 0, requests >= connections, payloadBytes >= 0 else {
            throw ValidationError("connections, pipeline and requests must be positive, requests at least one per connection")
        }
    }

    func run() throws {
        let value = String(repeating: "x", count: payloadBytes)
        var peers: [Peer] = []
        for index in 0..<connections {
            let share = requests / connections + (index < requests % connections ? 1 : 0)
            peers.append(try Peer(socket: socket, index: index, value: value, count: share, keyed: idempotencyKeys))
        }
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var errors = 0
        var readBuffer = [UInt8](repeating: 0, count: 1 << 16)
        let start = DispatchTime.now().uptimeNanoseconds
        var open = peers.count
        // Every connection starts with its pipeline full; from then on a connection refills as its
        // answers arrive and writes at once, asking poll for writability only when a write did not
        // take everything (as redis-benchmark does: no poll before each write).
        var descriptors = peers.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        for index in peers.indices {
            peers[index].fill(pipeline: pipeline)
            try peers[index].write()
        }
        while open > 0 {
            for index in peers.indices where descriptors[index].fd >= 0 {
                descriptors[index].events = Int16(POLLIN) | (peers[index].wantsToWrite ? Int16(POLLOUT) : 0)
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), 10_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw ValidationError("no answer from \(socket) for 10 s") }
            for index in peers.indices where descriptors[index].revents != 0 {
                let events = descriptors[index].revents
                descriptors[index].revents = 0
                if events & Int16(POLLOUT) != 0 { try peers[index].write() }
                guard events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
                let now = DispatchTime.now().uptimeNanoseconds
                try readBuffer.withUnsafeMutableBytes { buffer in
                    try peers[index].read(into: buffer) { sentAt, succeeded in
                        histogram.record(now - sentAt)
                        if !succeeded { errors += 1 }
                    }
                }
                if peers[index].isDone {
                    open -= 1
                    descriptors[index].fd = -1
                } else {
                    peers[index].fill(pipeline: pipeline)
                    try peers[index].write()
                }
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        func ms(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1e6 }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuSeconds = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let summary: [String: Double] = [
            "requests": Double(requests), "errors": Double(errors), "seconds": seconds,
            "perSecond": Double(requests) / seconds, "p50Ms": ms(50), "p99Ms": ms(99), "maxMs": Double(histogram.max) / 1e6,
            "clientCPUMicrosPerRequest": cpuSeconds * 1e6 / Double(requests),
        ]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
        for peer in peers { close(peer.fd) }
        if errors > 0 { throw ExitCode(1) }
    }
}

/// One connection: the requests it still has to send, the times its requests in flight were sent.
struct Peer {
    struct Answer {
        var sentAt: UInt64
        var succeeded: Bool
    }

    let fd: Int32
    private let prefix: [UInt8]
    private let suffix: [UInt8]
    private let value: [UInt8]
    private let keyed: Bool
    private var unsent: Int
    private var unanswered = 0
    private var nextID = 0
    private var outgoing: [UInt8] = []
    private var sentAt: [UInt64] = []  // a queue: answers come in request order
    private var firstUnanswered = 0
    private var incoming: [UInt8] = []

    init(socket path: String, index: Int, value: String, count: Int, keyed: Bool) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard fd >= 0, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ValidationError("cannot make a socket for \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw ValidationError("cannot connect to \(path): \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        prefix = Array(#"{"jsonrpc":"2.0","method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/c\#(index)","value":""#.utf8)
        // With keys: "idempotencyKey":"k<connection>-<id>", the id following as the request's own.
        suffix = Array((keyed ? #""}},"idempotencyKey":"k\#(index)-"# : #""}}},"id":"#).utf8)
        self.keyed = keyed
        unsent = count
        self.value = Array(value.utf8)
    }

    var isDone: Bool { unsent == 0 && unanswered == 0 }
    var wantsToWrite: Bool { !outgoing.isEmpty }

    /// Queues requests up to the pipeline depth.
    mutating func fill(pipeline: Int) {
        guard unsent > 0 && unanswered < pipeline else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        while unsent > 0 && unanswered < pipeline {
            outgoing += prefix
            outgoing += value
            outgoing += suffix
            appendID()
            if keyed {
                outgoing += Self.keyedIDMember
                appendID()
            }
            outgoing += Self.end
            nextID += 1
            unsent -= 1
            unanswered += 1
            sentAt.append(now)
        }
    }

    private static let keyedIDMember = Array(#""},"id":"#.utf8)
    private static let end = Array("}\n".utf8)
    private static let result = Array(#""result":"#.utf8)

    /// `nextID` in decimal, without a String.
    private mutating func appendID() {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { digits in
            var number = nextID
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(number % 10)
                number /= 10
            } while number > 0
            outgoing.append(contentsOf: digits[start...])
        }
    }

    /// Sends what is queued, as much as the socket takes.
    mutating func write() throws {
        guard !outgoing.isEmpty else { return }
        let written = outgoing.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
        } else if written > 0 {
            outgoing.removeFirst(written)
        } else if written < 0 && errno != EAGAIN && errno != EINTR {
            throw ValidationError("write failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads what is there into `buffer` and reports each complete answer line: when its request
    /// was sent, and whether it succeeded.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, answer: (UInt64, Bool) -> Void) throws {
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count == 0 { throw ValidationError("the daemon closed a connection with \(unanswered) answers owed") }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            throw ValidationError("read failed: \(String(cString: strerror(errno)))")
        }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
        var lineStart = 0
        for position in 0..<count where bytes[position] == UInt8(ascii: "\n") {
            let succeeded: Bool
            if incoming.isEmpty {
                succeeded = Self.isSuccess(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<position]))
            } else {
                incoming += bytes[lineStart..<position]
                succeeded = incoming.withUnsafeBytes { Self.isSuccess($0) }
                incoming.removeAll(keepingCapacity: true)
            }
            answer(sentAt[firstUnanswered], succeeded)
            firstUnanswered += 1
            unanswered -= 1
            lineStart = position + 1
        }
        incoming += bytes[lineStart..<count]
        if firstUnanswered > 4096 {
            sentAt.removeFirst(firstUnanswered)
            firstUnanswered = 0
        }
    }

    /// A success answer of dispatch: `{"jsonrpc":"2.0","id":N,"result":{"seq":…}}`.
    private static func isSuccess(_ line: UnsafeRawBufferPointer) -> Bool {
        let needle = result
        guard line.count >= needle.count else { return false }
        for start in 0...(line.count - needle.count) where line[start] == needle[0] {
            var index = 1
            while index < needle.count && line[start + index] == needle[index] { index += 1 }
            if index == needle.count { return true }
        }
        return false
    }
}
