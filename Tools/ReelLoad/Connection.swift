import ArgumentParser
import Foundation

/// A non-blocking Unix socket connection with what it still has to send and what it read past
/// the last complete line.
struct Connection {
    let fd: Int32
    private(set) var outgoing: [UInt8] = []
    private var incoming: [UInt8] = []

    init(socket path: String) throws {
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
    }

    var wantsToWrite: Bool { !outgoing.isEmpty }

    mutating func queue(_ bytes: [UInt8]) { outgoing += bytes }
    mutating func queue(_ bytes: ArraySlice<UInt8>) { outgoing += bytes }
    /// Queues what `build` appends.
    mutating func queue(_ build: (inout [UInt8]) -> Void) { build(&outgoing) }

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

    /// Reads what is there into `buffer` and hands each complete line (without its `\n`) to `line`.
    /// Returns `false` once the peer closed the connection.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, line: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count == 0 { return false }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return true }
            throw ValidationError("read failed: \(String(cString: strerror(errno)))")
        }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
        var lineStart = 0
        // memchr, not a loop over the bytes: the subscribers of a fan-out read megabytes a second,
        // and a byte-at-a-time scan was half of this process's CPU, for Reel and Redis alike.
        while lineStart < count, let found = memchr(bytes.baseAddress! + lineStart, Int32(UInt8(ascii: "\n")), count - lineStart) {
            let position = bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
            if incoming.isEmpty {
                line(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<position]))
            } else {
                incoming += bytes[lineStart..<position]
                incoming.withUnsafeBytes { line($0) }
                incoming.removeAll(keepingCapacity: true)
            }
            lineStart = position + 1
        }
        incoming += bytes[lineStart..<count]
        return true
    }
}

/// Byte searches over a line, without Strings.
enum LineScan {
    /// Where `needle` first (or, searching from the end, last) occurs in `line`, as the index just
    /// past it. (From the end, an update's own seq is found without reading its actions.)
    static func end(of needle: StaticString, in line: UnsafeRawBufferPointer, last: Bool = false) -> Int? {
        let length = needle.utf8CodeUnitCount
        guard line.count >= length else { return nil }
        let first = needle.utf8Start[0]
        func matches(_ start: Int) -> Bool {
            guard line[start] == first else { return false }
            var index = 1
            while index < length && line[start + index] == needle.utf8Start[index] { index += 1 }
            return index == length
        }
        if last {
            var start = line.count - length
            while start >= 0 {
                if matches(start) { return start + length }
                start -= 1
            }
            return nil
        }
        for start in 0...(line.count - length) where matches(start) { return start + length }
        return nil
    }

    /// The decimal number starting at `index`.
    static func number(in line: UnsafeRawBufferPointer, at index: Int) -> UInt64? {
        var value: UInt64 = 0
        var position = index
        while position < line.count, line[position] &- UInt8(ascii: "0") < 10 {
            value = value &* 10 &+ UInt64(line[position] &- UInt8(ascii: "0"))
            position += 1
        }
        return position > index ? value : nil
    }
}

/// Wall-clock nanoseconds: the send time travels inside payloads to the subscribers.
func wallClockNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Appends a value that starts with `t` and the send time in 19 digits, then `filler`.
func appendStampedValue(to bytes: inout [UInt8], filler: [UInt8], at nanoseconds: UInt64) {
    bytes.append(UInt8(ascii: "t"))
    let start = bytes.count
    bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 19))
    var number = nanoseconds
    for position in stride(from: start + 18, through: start, by: -1) {
        bytes[position] = UInt8(ascii: "0") + UInt8(number % 10)
        number /= 10
    }
    bytes.append(contentsOf: filler)
}

/// Appends `value` in decimal.
func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
    if value >= 10 { appendDecimal(value / 10, to: &bytes) }
    bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
}
