import NIOCore

/// Why the framing of a connection failed. The connection answers with the matching protocol error
/// and is closed; nothing it sent after the failure is read.
public enum FramingError: Error, Equatable, Sendable {
    /// A line (a message) is longer than the configured limit, in bytes.
    case lineTooLong(limit: Int)
    /// The peer sent part of a line and then nothing for this long.
    case stalledMidLine(after: TimeAmount)
}

/// Splits a connection's byte stream into messages: one line each, terminated by `\n` (a `\r`
/// before it is dropped). Enforces the protocol's limits on the way:
///
/// - a line longer than `maxLineLength` bytes is refused as soon as that many bytes without a
///   newline have arrived, so a peer cannot make the daemon buffer an unbounded line;
/// - a peer that stops in the middle of a line for `midLineTimeout` is cut off. An idle connection
///   *between* lines is fine: subscribers wait for updates without sending anything.
///
/// Empty lines are skipped (handy when typing into `socat`).
public final class LineFramingHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    private var framer: LineFramer
    private let midLineTimeout: TimeAmount
    private var stallTimer: Scheduled<Void>?
    private var failed = false

    /// - Parameters:
    ///   - maxLineLength: the longest line accepted, in bytes, not counting the newline.
    ///   - midLineTimeout: how long a partial line may wait for the rest.
    public init(maxLineLength: Int, midLineTimeout: TimeAmount) {
        precondition(maxLineLength > 0, "maxLineLength must be positive")
        self.framer = LineFramer(maxLineLength: maxLineLength)
        self.midLineTimeout = midLineTimeout
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var incoming = unwrapInboundIn(data)
        let read = framer.read(&incoming)
        for line in read.lines {
            context.fireChannelRead(wrapInboundOut(line))
            if failed { return }
        }
        if read.refused {
            fail(context: context, .lineTooLong(limit: framer.maxLineLength))
            return
        }
        if !read.hasPartialLine || read.completedALine {
            // The partial line (if any) is a new one: its clock starts now.
            stallTimer?.cancel()
            stallTimer = nil
        }
        if read.hasPartialLine && stallTimer == nil {
            // Started when a partial line first arrives, not reset by more of the same line: a
            // peer trickling a byte a minute must not hold a connection (and its buffer) forever.
            let timeout = midLineTimeout
            stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
                fail(context: context, .stalledMidLine(after: timeout))
            }
        }
    }

    private func fail(context: ChannelHandlerContext, _ error: FramingError) {
        guard !failed else { return }
        failed = true
        framer.inputClosed()
        stallTimer?.cancel()
        stallTimer = nil
        context.fireErrorCaught(error)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // No more bytes will come: a partial line stays incomplete, and is no stall to report
            // while the connection sends its last answers.
            framer.inputClosed()
            stallTimer?.cancel()
            stallTimer = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        stallTimer?.cancel()
        stallTimer = nil
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        stallTimer?.cancel()
        stallTimer = nil
    }
}
