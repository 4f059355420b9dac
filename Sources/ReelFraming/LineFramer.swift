#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// The framing rules of ``LineFramingHandler`` as a plain value, without I/O or timers: bytes go
/// in as they arrive, complete lines come out. Tested and fuzzed on its own; the handler adds the
/// channel, ``MidLineStallHandler`` the timer.
///
/// A line ends at `\n`; a `\r` before it is dropped; empty lines are skipped. A line longer than
/// `maxLineLength` bytes (not counting its `\r\n`) is refused as soon as that many bytes without a
/// newline have arrived, however the bytes are split into reads.
public struct LineFramer: Sendable {
    /// What one read gave.
    public struct Read: Sendable {
        /// The complete lines, in order (those before a refused line included).
        public var lines: [ByteBuffer] = []
        /// Whether a line was completed (then any partial line after it is a new one).
        public var completedALine = false
        /// Whether a line was refused as too long: the framer reads nothing more.
        public var refused = false
        /// Whether part of a line is waiting for the rest.
        public var hasPartialLine = false
    }

    public let maxLineLength: Int
    private var pending: ByteBuffer?
    /// How many bytes at the start of `pending` are known to hold no newline: a long line arriving
    /// in many small reads is scanned once, not once per read.
    private var scanned = 0
    /// Set once a line was refused: nothing after it is read.
    public private(set) var isFailed = false

    public init(maxLineLength: Int) {
        precondition(maxLineLength > 0, "maxLineLength must be positive")
        self.maxLineLength = maxLineLength
    }

    /// Takes the bytes of one read.
    public mutating func read(_ incoming: inout ByteBuffer) -> Read {
        var result = Read()
        guard !isFailed else {
            result.refused = true
            return result
        }
        var buffer: ByteBuffer
        if var earlier = pending.take() {
            earlier.writeBuffer(&incoming)  // (in place: `pending` no longer shares it)
            buffer = earlier
        } else {
            buffer = incoming
        }
        // The newlines are found with memchr over the readable bytes and the lines cut out as
        // slices of them (a byte-at-a-time search through the buffer's view, and a copy of the
        // buffer per line, were 4% of an event loop's time with 16 requests per read).
        var consumed = 0  // bytes of `buffer`, from its reader index, in complete lines
        var tooLong = false
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = scanned
            while offset < bytes.count, let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), bytes.count - offset) {
                let newline = UnsafeRawPointer(found) - base
                result.completedALine = true
                var length = newline - consumed
                if length > 0 && bytes[newline - 1] == UInt8(ascii: "\r") { length -= 1 }
                guard length <= maxLineLength else {
                    tooLong = true
                    return
                }
                if length > 0 { result.lines.append(buffer.getSlice(at: buffer.readerIndex + consumed, length: length)!) }
                consumed = newline + 1
                offset = consumed
            }
        }
        if tooLong {
            fail(&result)
            return result
        }
        buffer.moveReaderIndex(forwardBy: consumed)
        pending = buffer.readableBytes > 0 ? buffer : nil
        scanned = pending?.readableBytes ?? 0
        // A partial line already longer than the limit is refused now, without waiting for its
        // end; but a last "\r" may be the start of the "\r\n" that ends a line of exactly the
        // limit, which is accepted when it arrives in one piece (found by fuzzing the chunking).
        if let pending, pending.readableBytes > maxLineLength,
            pending.readableBytes > maxLineLength + 1 || pending.readableBytesView.last != UInt8(ascii: "\r")
        {
            fail(&result)
            return result
        }
        result.hasPartialLine = pending != nil
        return result
    }

    /// The peer sent its last byte: a partial line stays incomplete and is dropped.
    public mutating func inputClosed() {
        pending = nil
        scanned = 0
    }

    private mutating func fail(_ result: inout Read) {
        isFailed = true
        pending = nil
        scanned = 0
        result.refused = true
        result.hasPartialLine = false
    }
}
