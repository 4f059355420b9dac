import NIOCore

/// Why the framing of a connection failed. The connection answers (or reports) the matching
/// error and is closed; nothing it sent after the failure is read.
public enum FramingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A line (a message) is longer than the configured limit, in bytes.
    case lineTooLong(limit: Int)
    /// The peer sent part of a line and then nothing for this long.
    case stalledMidLine(after: TimeAmount)

    public var description: String {
        switch self {
        case .lineTooLong(let limit): "a line longer than the limit of \(limit) bytes"
        case .stalledMidLine(let after): "no newline after \(after.nanoseconds / 1_000_000_000) s in the middle of a line"
        }
    }
}

/// What the framing tells the handlers after it, besides the lines: when a partial line starts
/// waiting for its end, and when it stops waiting (its newline came, or the input ended). The
/// ``MidLineStallHandler`` times the wait.
public enum PartialLineEvent: Sendable, Equatable {
    case started
    case ended
}

/// Splits a connection's byte stream into messages with the rules of ``LineFramer``: one line
/// each, terminated by `\n` (a `\r` before it is dropped), empty lines skipped, a line longer
/// than `maxLineLength` bytes refused as soon as that many bytes without a newline have arrived
/// (so a peer cannot make its reader buffer an unbounded line).
///
/// Both ends use it: the daemon for requests, the client for what the daemon sends. The daemon
/// adds a ``MidLineStallHandler`` after it; the idle time *between* lines is nobody's business
/// here (subscribers wait for updates without sending anything).
public final class LineFramingHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    private var framer: LineFramer
    private var waitingForNewline = false
    private var failed = false

    /// - Parameter maxLineLength: the longest line accepted, in bytes, not counting the newline.
    public init(maxLineLength: Int) {
        precondition(maxLineLength > 0, "maxLineLength must be positive")
        self.framer = LineFramer(maxLineLength: maxLineLength)
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
            failed = true
            context.fireErrorCaught(FramingError.lineTooLong(limit: framer.maxLineLength))
            return
        }
        // A partial line after a completed one is a new one: its wait starts now.
        if waitingForNewline && (!read.hasPartialLine || read.completedALine) {
            waitingForNewline = false
            context.fireUserInboundEventTriggered(PartialLineEvent.ended)
        }
        if read.hasPartialLine && !waitingForNewline {
            waitingForNewline = true
            context.fireUserInboundEventTriggered(PartialLineEvent.started)
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // No more bytes will come: a partial line stays incomplete, and is no stall to report
            // while the connection sends its last answers.
            framer.inputClosed()
            if waitingForNewline {
                waitingForNewline = false
                context.fireUserInboundEventTriggered(PartialLineEvent.ended)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An error before the framing (a stall reported by no one here, a socket error) ends the
        // reading just the same.
        failed = true
        context.fireErrorCaught(error)
    }
}

/// Cuts off a peer that stops in the middle of a line: after ``LineFramingHandler`` in the
/// pipeline, it starts a clock when a partial line starts waiting for its newline and fails the
/// connection with ``FramingError/stalledMidLine(after:)`` when the clock runs out first.
///
/// The clock starts when a partial line first arrives and is not reset by more of the same line:
/// a peer trickling a byte a minute must not hold a connection (and its buffer) forever.
public final class MidLineStallHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var failed = false

    /// - Parameter timeout: how long a partial line may wait for the rest.
    public init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Lines the framing completed after the peer was cut off count as never read.
        guard !failed else { return }
        context.fireChannelRead(data)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event as? PartialLineEvent {
        case .started?:
            guard !failed, timer == nil else { return }
            let timeout = self.timeout
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
                timer = nil
                failed = true
                context.fireErrorCaught(FramingError.stalledMidLine(after: timeout))
            }
        case .ended?:
            cancelTimer()
        case nil:
            context.fireUserInboundEventTriggered(event)
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}
