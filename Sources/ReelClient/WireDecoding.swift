import ReelCore
import ReelJSON
import ReelProtocol

/// Reads the daemon's results and notifications into the client's types.
///
/// Lenient where the protocol allows additions (unknown members are ignored, so a newer daemon
/// keeps working), strict about what SPEC.md promises: a result without its `seq` is a protocol
/// violation, not a zero.
enum WireDecoding {
    static func object(_ json: JSONValue, _ what: String) throws(ReelClientError) -> [String: JSONValue] {
        guard case .object(let members) = json else {
            throw .violation("\(what) as \(json.typeName) instead of an object")
        }
        return members
    }

    static func seq(_ json: JSONValue?, _ what: String) throws(ReelClientError) -> UInt64 {
        guard let number = json?.intValue, let seq = UInt64(exactly: number) else {
            throw .violation("\(what) without a seq (a non-negative integer)")
        }
        return seq
    }

    static func string(_ json: JSONValue?, _ what: String) throws(ReelClientError) -> String {
        guard case .string(let text)? = json else { throw .violation("\(what) that is not a string") }
        return text
    }

    static func hello(_ result: JSONValue) throws(ReelClientError) -> ServerHello {
        let members = try object(result, "a hello result")
        let reducer = try object(members["reducer"] ?? .null, "a hello result's reducer")
        guard let version = members["protocol"]?.intValue else {
            throw .violation("a hello result without its protocol version")
        }
        var capabilities: [String] = []
        for capability in members["capabilities"]?.arrayValue ?? [] {
            capabilities.append(try string(capability, "a capability"))
        }
        return ServerHello(
            server: try string(members["server"], "a hello result's server"),
            version: try string(members["version"], "a hello result's version"),
            protocolVersion: Int(clamping: version),
            seq: try seq(members["seq"], "a hello result"),
            reducer: ReducerIdentity(
                name: try string(reducer["name"], "a reducer name"), version: try string(reducer["version"], "a reducer version")
            ),
            capabilities: capabilities
        )
    }

    static func receipt(_ result: JSONValue) throws(ReelClientError) -> DispatchReceipt {
        let members = try object(result, "a dispatch result")
        return DispatchReceipt(seq: try seq(members["seq"], "a dispatch result"), duplicate: members["duplicate"] == true)
    }

    static func batchReceipt(_ result: JSONValue) throws(ReelClientError) -> BatchReceipt {
        let members = try object(result, "a batch dispatch result")
        guard let elements = members["seqs"]?.arrayValue, !elements.isEmpty else {
            throw .violation("a batch dispatch result without seqs")
        }
        var seqs: [UInt64] = []
        for element in elements { seqs.append(try seq(element, "a batch dispatch result")) }
        guard let first = seqs.first, let last = seqs.last, seqs == Array(first...last) else {
            throw .violation("a batch dispatch result whose seqs are not consecutive: \(members["seqs"] ?? .null)")
        }
        return BatchReceipt(seqs: first...last, duplicate: members["duplicate"] == true)
    }

    static func snapshot(_ result: JSONValue) throws(ReelClientError) -> Snapshot<JSONValue> {
        let members = try object(result, "a get result")
        guard let value = members["value"] else { throw .violation("a get result without a value") }
        return Snapshot(seq: try seq(members["seq"], "a get result"), value: value)
    }

    static func historyPage(_ result: JSONValue) throws(ReelClientError) -> HistoryPage {
        let members = try object(result, "a history result")
        guard let elements = members["actions"]?.arrayValue else {
            throw .violation("a history result without an actions array")
        }
        var next: UInt64?
        if let raw = members["next"], !raw.isNull { next = try seq(raw, "a history result's next") }
        return HistoryPage(actions: try envelopes(elements), next: next)
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

    static func replay(_ result: JSONValue) throws(ReelClientError) -> ReplayResult {
        let members = try object(result, "a replay result")
        guard let value = members["value"] else { throw .violation("a replay result without a value") }
        var refused: [RefusedAction] = []
        for element in members["refused"]?.arrayValue ?? [] {
            let entry = try object(element, "a refused action")
            refused.append(RefusedAction(
                seq: try seq(entry["seq"], "a refused action"), reason: try string(entry["reason"], "a refusal reason")
            ))
        }
        return ReplayResult(value: value, refused: refused)
    }

    /// The `subscribe` result: `{subscription, seq, value?}` (no value in actions mode).
    static func subscriptionStart(_ result: JSONValue, mode: SubscriptionMode) throws(ReelClientError) -> SubscriptionStart {
        let members = try object(result, "a subscribe result")
        let id = try string(members["subscription"], "a subscribe result's subscription id")
        let seq = try seq(members["seq"], "a subscribe result")
        guard mode == .actions else {
            guard let value = members["value"] else { throw .violation("a subscribe result without a value") }
            return SubscriptionStart(serverID: id, seq: seq, value: value)
        }
        return SubscriptionStart(serverID: id, seq: seq, value: nil)
    }

    /// An `update` notification's params for a subscription of `mode`.
    static func update(_ params: [String: JSONValue], mode: SubscriptionMode) throws(ReelClientError) -> SubscriptionUpdate {
        let seq = try seq(params["seq"], "an update")
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
}
