import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// Writes a connection's output: responses in request order, then subscription updates computed
/// from the latest committed state.
///
/// Every write waits for the socket to take it (NIO back-pressure), so a peer that does not read
/// stalls only its own writer: nothing piles up for it but the bounded response slots, and its
/// value/patch updates coalesce into one computed from the newest state when it reads again.
/// Actions-mode updates are read from the log at the peer's pace, so none is ever skipped.
struct UpdateWriter<State: StoreState>: Sendable {
    let handler: MethodHandler<State>
    let outbox: Outbox
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    /// Actions sent per update in actions mode, at most.
    static var actionsPerUpdate: Int { 500 }

    func run() async throws {
        for await _ in outbox.wakeupStream {
            if try await drain() { return }
        }
    }

    /// Writes everything that can be written now. Returns `true` when the connection is done.
    private func drain() async throws -> Bool {
        while true {
            let (slots, drained) = outbox.takeReady()
            if !slots.isEmpty {
                // Every answer ready now in one write: one hop to the event loop and one flush for
                // all the acknowledgements a commit settled, not one per answer.
                var buffer = ByteBuffer()
                buffer.reserveCapacity(slots.reduce(0) { $0 + ($1.bytes?.count ?? 0) })
                var closes = false
                for slot in slots {
                    buffer.writeBytes(slot.bytes!)
                    if slot.closesConnection {
                        closes = true
                        break
                    }
                }
                try await outbound.write(buffer)
                if closes { return true }
            }
            if drained { return true }
            let updated = try await writeUpdates()
            if slots.isEmpty && !updated { return false }
        }
    }

    /// Sends what changed for each active subscription. Returns whether anything was sent.
    private func writeUpdates() async throws -> Bool {
        let subscriptions = outbox.activeSubscriptions
        guard !subscriptions.isEmpty else { return false }
        let snapshot = handler.store.snapshot
        var json: JSONValue?  // the state as JSON, made once for all subscriptions of this round
        var sent = false
        for subscription in subscriptions {
            var delivered = subscription.delivered
            guard delivered.seq < snapshot.seq else { continue }
            switch subscription.mode {
            case .value, .patch:
                if json == nil { json = try snapshot.state.jsonValueOrThrow(seq: snapshot.seq) }
                let value = json!.value(at: subscription.path) ?? .null
                if value != delivered.value {
                    let update: RPCNotification = subscription.mode == .value
                        ? .update(subscription: subscription.id, seq: snapshot.seq, value: value)
                        : .update(subscription: subscription.id, seq: snapshot.seq, patch: JSONPatch(from: delivered.value, to: value))
                    try await outbound.write(ByteBuffer(bytes: update.encodedLine()))
                    sent = true
                }
                delivered = .init(seq: snapshot.seq, value: value)
            case .actions:
                let page = try await handler.history(from: delivered.seq + 1, to: snapshot.seq, limit: Self.actionsPerUpdate)
                guard let last = page.actions.last else {
                    delivered.seq = snapshot.seq
                    break
                }
                let update = RPCNotification.update(subscription: subscription.id, seq: last.seq, actions: page.actions)
                try await outbound.write(ByteBuffer(bytes: update.encodedLine()))
                delivered.seq = last.seq
                sent = true
            }
            subscription.delivered = delivered
        }
        return sent
    }
}
