import NIOCore

/// Splits the daemon's byte stream into lines: one JSON-RPC message each, `\n`-terminated (a
/// `\r` before it is dropped).
///
/// The daemon puts no limit on the lines it sends (a `get` of a large state is one line), so the
/// client sets its own, ``ReelClientConfiguration/maxLineLength``: enough for any state the app
/// expects, small enough that a broken peer cannot make it buffer without end. Written here rather
/// than taken from swift-nio-extras' `LineBasedFrameDecoder`, which has no length limit of its own
/// and would bring that package (and its HTTP dependencies) in for twenty lines.
struct ServerLineDecoder: NIOSingleStepByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    /// A line longer than the limit arrived (or is arriving).
    struct LineTooLong: Error, CustomStringConvertible {
        var limit: Int
        var description: String {
            "the daemon sent a line longer than \(limit) bytes (raise ReelClientConfiguration.maxLineLength to accept it)"
        }
    }

    let maxLineLength: Int
    /// How many bytes at the front of the buffer are known to hold no newline: a long line that
    /// arrives in many reads is scanned once, not once per read.
    private var scanned = 0

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    mutating func decode(buffer: inout ByteBuffer) throws -> ByteBuffer? {
        let view = buffer.readableBytesView
        guard let newline = view.dropFirst(scanned).firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = view.count
            if scanned > maxLineLength + 1 { throw LineTooLong(limit: maxLineLength) }
            return nil
        }
        scanned = 0
        var length = newline - view.startIndex
        if length > 0 && view[newline - 1] == UInt8(ascii: "\r") { length -= 1 }
        guard length <= maxLineLength else { throw LineTooLong(limit: maxLineLength) }
        let line = buffer.getSlice(at: buffer.readerIndex, length: length) ?? ByteBuffer()
        buffer.moveReaderIndex(to: newline + 1)
        return line
    }

    mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        if let line = try decode(buffer: &buffer) { return line }
        // A partial line at the end of the stream cannot be a whole message: drop it.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        scanned = 0
        return nil
    }
}
