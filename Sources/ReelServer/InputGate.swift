import NIOCore

/// Ends a connection's input for the handlers after it, without shutting the socket's read side:
/// how a graceful shutdown stops reading a connection that must still get its answers.
///
/// Not `Channel.close(mode: .input)`. On Linux, `shutdown(SHUT_RD)` on a Unix socket
/// - makes the socket itself report `EPOLLRDHUP` at once. NIO takes that for the peer's end of
///   input and closes the whole channel (it does without remote half-closure), dropping the
///   answers to the requests read before: the store commits their actions, the peer never hears.
/// - makes the peer's next write fail with `EPIPE`, which clients take for a lost connection
///   while their answers are still on the way.
///
/// Closed with the outbound user event ``Close`` instead, the gate passes no more bytes on, stops
/// asking the socket for reads (what the peer sends later stays unread in the kernel), and fires
/// `ChannelEvent.inputClosed` to the handlers after it: the ``RequestIntake`` passes it on after
/// the lines it already holds, and the ``ConnectionHandler`` ends the connection's input, so the
/// connection answers exactly what it read.
/// Sits first in the pipeline, before the framing.
final class InputGate: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Closes the gate: `channel.triggerUserOutboundEvent(InputGate.Close())`. Closing it again
    /// does nothing.
    struct Close: Sendable {}

    private var closed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Bytes the socket delivered after the gate closed count as never read.
        guard !closed else { return }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        guard !closed else { return }
        context.read()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is Close else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        if !closed {
            closed = true
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        promise?.succeed(())
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The peer ending its input after the gate closed: the handlers after it know already.
        if closed, let event = event as? ChannelEvent, event == .inputClosed { return }
        context.fireUserInboundEventTriggered(event)
    }
}
