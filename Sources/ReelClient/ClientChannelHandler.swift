import NIOCore
import ReelFraming
import ReelProtocol

/// The inbound end of one connection: reads each line from the daemon and hands it to the core.
///
/// A channel handler rather than a task reading an `NIOAsyncChannel`: answers and updates must
/// be routed in exactly the order they were read, and a `subscribe` answer must register its
/// subscription before the next line — which may be that subscription's first update — is
/// looked at. Handling each line synchronously on the event loop gives both for free, without a
/// task per connection.
final class ClientChannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let core: ClientCore
    private let generation: UInt64

    init(core: ClientCore, generation: UInt64) {
        self.core = core
        self.generation = generation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        guard line.readableBytes > 0 else { return }
        let message: RPCServerMessage
        do {
            message = try RPCServerMessage.parse(Array(line.readableBytesView))
        } catch {
            fail(context: context, "it sent a line that is not protocol 1: \(error.message)")
            return
        }
        switch message {
        case .response(let response) where response.id == nil:
            // An error about the connection itself (a framing limit, too many connections): the
            // daemon closes the connection after it. A line over its limit is one of this
            // client's requests, refused; anything else is the reason for what gets dropped.
            if let error = response.error, error.code == RPCError.Code.tooLarge, error.data?["limit"] != nil {
                core.noteLineRefused(error, generation: generation)
            } else {
                let error = response.error.map { "error \($0.code): \($0.message)" } ?? "an answer without an id"
                core.noteProblem("the daemon sent \(error)", generation: generation)
            }
        case .response(let response):
            core.received(response, generation: generation)
        case .notification(let notification) where notification.method == WireProtocol.updateMethod:
            core.receivedUpdate(notification.params, generation: generation)
        case .notification:
            break  // a notification of a later protocol revision: ignored, as the protocol asks
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case FramingError.lineTooLong(let limit) = error {
            fail(context: context, "the daemon sent a line longer than \(limit) bytes (raise ReelClientConfiguration.maxLineLength to accept it)")
            return
        }
        fail(context: context, "\(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.connectionLost(generation: generation)
        context.fireChannelInactive()
    }

    private func fail(context: ChannelHandlerContext, _ reason: String) {
        core.noteProblem(reason, generation: generation)
        context.close(promise: nil)
    }
}
