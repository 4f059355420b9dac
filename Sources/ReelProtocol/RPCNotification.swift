import ReelCore
import ReelJSON

/// A message the server sends without being asked: a JSON-RPC notification, with no `id`.
///
/// Protocol 1 has one, `update`, built with ``RPCNotification/update(subscription:seq:value:)``
/// and its siblings. On the wire: `{"jsonrpc":"2.0","method":"update","params":{…}}`.
public struct RPCNotification: Sendable, Equatable, LineEncodable {
    /// The method name, such as `"update"`.
    public var method: String
    /// The params member, or `nil` to omit it.
    public var params: JSONValue?

    /// - Parameters:
    ///   - method: The method name.
    ///   - params: An object or array, or `nil` to omit the member.
    public init(method: String, params: JSONValue? = nil) {
        self.method = method
        self.params = params
    }

    /// Appends the notification as one line — `jsonrpc`, `method`, `params`, then `"\n"` — to `bytes`.
    ///
    /// - Parameter bytes: The buffer to append UTF-8 text to.
    public func encode(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"jsonrpc":"2.0","method":"#.utf8)
        JSONValue.string(method).serialize(into: &bytes)
        if let params {
            bytes.append(contentsOf: #","params":"#.utf8)
            params.serialize(into: &bytes)
        }
        bytes.append(contentsOf: "}\n".utf8)
    }

}

extension RPCNotification {
    /// An `update` in `value` mode: `{subscription, seq, value}`, the whole value at the path.
    ///
    /// - Parameters:
    ///   - subscription: The subscription's id.
    ///   - seq: The seq whose state `value` is taken from (coalesced updates may skip seqs).
    ///   - value: The value at the subscribed path.
    public static func update(subscription: String, seq: UInt64, value: JSONValue) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: [
            "subscription": .string(subscription), "seq": JSONValue(seq: seq), "value": value,
        ])
    }

    /// An `update` in `patch` mode: `{subscription, seq, patch}`, RFC 6902 relative to the
    /// previously delivered value (the one in the `subscribe` result for the first update).
    ///
    /// - Parameters:
    ///   - subscription: The subscription's id.
    ///   - seq: The seq whose state the patch leads to.
    ///   - patch: The patch, with paths relative to the subscribed path.
    public static func update(subscription: String, seq: UInt64, patch: JSONPatch) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: [
            "subscription": .string(subscription), "seq": JSONValue(seq: seq), "patch": patch.jsonValue,
        ])
    }

    /// An `update` in `actions` mode: `{subscription, seq, actions: […]}`, the accepted actions in
    /// order, each as in `history` (``ActionEnvelope/writeWire(into:)``).
    ///
    /// - Parameters:
    ///   - subscription: The subscription's id.
    ///   - seq: The seq of the last action (the one a client resumes `since`).
    ///   - actions: The actions committed since the previous update, in seq order, none missing.
    public static func update(subscription: String, seq: UInt64, actions: [ActionEnvelope]) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: [
            "subscription": .string(subscription), "seq": JSONValue(seq: seq),
            "actions": .array(actions.map(\.wireJSON)),
        ])
    }

    /// An `update` of a shared feed in `value` mode: `{feed, seq, value}`.
    public static func update(feed: String, seq: UInt64, value: JSONValue) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: ["feed": .string(feed), "seq": JSONValue(seq: seq), "value": value])
    }

    /// An `update` of a shared feed in `patch` mode: `{feed, seq, patch}`.
    public static func update(feed: String, seq: UInt64, patch: JSONPatch) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: ["feed": .string(feed), "seq": JSONValue(seq: seq), "patch": patch.jsonValue])
    }

    /// An `update` of the shared `actions` feed: `{feed, seq, actions: […]}`.
    public static func update(feed: String, seq: UInt64, actions: [ActionEnvelope]) -> RPCNotification {
        RPCNotification(method: WireProtocol.updateMethod, params: [
            "feed": .string(feed), "seq": JSONValue(seq: seq), "actions": .array(actions.map(\.wireJSON)),
        ])
    }
}
