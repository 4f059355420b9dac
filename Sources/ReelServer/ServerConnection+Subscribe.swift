import NIOCore
import ReelJSON
import ReelProtocol
import ReelStore

extension ServerConnection {
    /// Starts a subscription. Its result carries the seq (and, in value and patch modes, the value)
    /// the updates start from: now, or with `since: S` the state at `S`, so that the first update
    /// brings exactly what was missed after `S` — no gap, no duplicate. A path with nothing at it
    /// reads as `null`: a subscriber may watch a slice before it exists.
    func subscribe(_ params: SubscribeParams, id: RPCID, outbox: Outbox) async -> ([UInt8], Subscription?) {
        let start: (seq: UInt64, value: JSONValue?)
        do throws(RPCError) {
            let latest = handler.store.snapshot.seq
            if let since = params.since, since > latest {
                throw RPCError(code: RPCError.Code.seqOutOfRange, message: "since \(since) is beyond the latest seq \(latest)")
            }
            if params.mode == .actions {
                start = (params.since ?? latest, nil)
            } else {
                start = try await handler.slice(at: params.since, path: params.path)
            }
        } catch {
            return (RPCResponse(id: id, error: error).encodedLine(), nil)
        }
        let subscription = Subscription(
            id: subscriptionIDs.make(), path: params.path, mode: params.mode, seq: start.seq, value: start.value ?? .null,
            feed: params.shared ? params.feed : nil
        )
        switch outbox.add(subscription, limit: limits.maxSubscriptionsPerConnection) {
        case .added:
            break
        case .refused:
            return (RPCResponse(id: id, error: RPCError(
                code: RPCError.Code.overloaded,
                message: "this connection already has \(limits.maxSubscriptionsPerConnection) subscriptions; unsubscribe some or open another connection"
            )).encodedLine(), nil)
        case .feedTaken(let other):
            return (RPCResponse(id: id, error: .invalidParams(
                "this connection already receives the shared feed \(JSONValue.string(params.feed).jsonString) (subscription \(other)); its updates serve every subscriber of it on the connection"
            )).encodedLine(), nil)
        }
        // Not `nil` in a ternary: JSONValue is ExpressibleByNilLiteral, so that would mean `.null`.
        let value: JSONValue? = params.mode == .actions ? Optional.none : .some(start.value ?? .null)
        let result = SubscribeResult(subscription: subscription.id, seq: start.seq, value: value, feed: subscription.feed)
        return (RPCSuccess(id: id, result: result).encodedLine(), subscription)
    }
}
