import ReelCore
import ReelJSON
import ReelProtocol

/// Reads the daemon's results and notifications into the client's types.
///
/// Lenient where the protocol allows additions (unknown members are ignored, so a newer daemon
/// keeps working), strict about what the protocol promises (docs/REFERENCE.md): a result without its `seq` is a protocol
/// violation, not a zero.
enum WireDecoding {
    /// Reads a result into its protocol type; a result that does not fit is a protocol violation.
    static func decode<Result: MethodResult>(_ type: Result.Type, _ result: JSONValue) throws(ReelClientError) -> Result {
        do {
            return try Result(result: result)
        } catch {
            throw ReelClientError(.protocolViolation, "the daemon's answer does not fit protocol 1: \(error.message)", underlying: error)
        }
    }

    static func envelopes(_ elements: [JSONValue]) throws(ReelClientError) -> [ActionEnvelope] {
        var envelopes: [ActionEnvelope] = []
        envelopes.reserveCapacity(elements.count)
        for element in elements { envelopes.append(try envelope(element)) }
        return envelopes
    }

    /// One logged action as `history` and actions-mode updates carry it (read by the protocol
    /// module, which also writes it, so the two sides cannot drift apart).
    static func envelope(_ json: JSONValue) throws(ReelClientError) -> ActionEnvelope {
        do {
            return try ActionEnvelope(wire: json)
        } catch {
            throw ReelClientError(.protocolViolation, "the daemon sent \(error.message)", serverError: nil, underlying: error)
        }
    }

    static func patch(_ json: JSONValue?, _ what: String) throws(ReelClientError) -> JSONPatch {
        do {
            return try JSONPatch(json ?? .null)
        } catch {
            throw ReelClientError(.protocolViolation, "the daemon sent \(what) that is not a JSON Patch: \(error.message)", underlying: error)
        }
    }

    /// The `subscribe` result: `{feed?, subscription, seq, value?}` (no value in actions mode, a
    /// feed for a shared subscription).
    static func subscriptionStart(_ result: JSONValue, mode: SubscriptionMode) throws(ReelClientError) -> SubscriptionStart {
        let start = try decode(SubscribeResult.self, result)
        guard mode == .actions else {
            guard let value = start.value else { throw .violation("a subscribe result without a value") }
            return SubscriptionStart(serverID: start.subscription, seq: start.seq, value: value, feed: start.feed)
        }
        return SubscriptionStart(serverID: start.subscription, seq: start.seq, value: nil, feed: start.feed)
    }

    /// An `update` notification's params for a subscription of `mode`.
    static func update(_ params: JSONObject, mode: SubscriptionMode) throws(ReelClientError) -> SubscriptionUpdate {
        guard let number = params["seq"]?.intValue, let seq = UInt64(exactly: number) else {
            throw .violation("an update without a seq (a non-negative integer)")
        }
        switch mode {
        case .value:
            guard let value = params["value"] else { throw .violation("a value-mode update without a value") }
            return SubscriptionUpdate(seq: seq, change: .value(value))
        case .patch:
            return SubscriptionUpdate(seq: seq, change: .patch(try patch(params["patch"], "a patch-mode update")))
        case .actions:
            guard let elements = params["actions"]?.arrayValue else {
                throw .violation("an actions-mode update without an actions array")
            }
            return SubscriptionUpdate(seq: seq, change: .actions(try envelopes(elements)))
        }
    }
}

/// Where a subscription starts, as its `subscribe` result says.
struct SubscriptionStart: Sendable, Equatable {
    /// The id the daemon gave it on this connection.
    var serverID: String
    /// The seq updates follow from.
    var seq: UInt64
    /// The value at the path at `seq`; `nil` in actions mode.
    var value: JSONValue?
    /// The shared feed whose updates it receives (they name the feed); `nil` for updates of its own.
    var feed: String? = nil
}
