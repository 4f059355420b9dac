import NIOCore
import ReelCore
import ReelProtocol
import ReelStore

/// The connection's closing task: waits for the connection to end, and writes the answers itself
/// once the event loop handed them over (before an answer that closes the connection).
///
/// Every write waits for the socket to take it (NIO back-pressure), so a peer that does not read
/// stalls only its own connection: nothing piles up for it but the bounded response slots.
/// Subscription updates are not written here but on the event loop (``Outbox/deliverUpdates()``).
struct ClosingAnswerTask: Sendable {
    let outbox: Outbox
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    func run() async throws {
        for await _ in outbox.wakeupStream {
            if try await drain() { return }
        }
    }

    /// Writes every answer that can be written now. Returns `true` when the connection is done.
    private func drain() async throws -> Bool {
        while true {
            let (slots, drained) = outbox.takeReady()
            if !slots.isEmpty {
                // Every answer ready now in one write: one hop to the event loop and one flush.
                // Up to an answer that closes the connection: nothing goes out after it.
                let closing = slots.firstIndex { $0.closesConnection }
                let closes = closing != nil
                let bytes = Outbox.encode(slots[...(closing ?? slots.count - 1)], figures: outbox.figures)
                try await outbound.write(ByteBuffer(bytes: bytes))
                if closes { return true }
            }
            if drained { return true }
            if slots.isEmpty { return false }
        }
    }
}
