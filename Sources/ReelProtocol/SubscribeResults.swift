import ReelJSON

/// The `subscribe` result: `{feed, seq, subscription, value}`, without `value` in `actions` mode
/// and `feed` unless the subscription is shared.
public struct SubscribeResult: MethodResult, Equatable {
    /// The id the client passes to `unsubscribe` and finds in every `update`.
    public var subscription: String
    /// The seq the subscription starts at: updates follow from the next one.
    public var seq: UInt64
    /// The value at the path at `seq`; `nil` in `actions` mode.
    public var value: JSONValue?
    /// The feed whose updates a shared subscription receives (they name it instead of the
    /// subscription); `nil` for a subscription with updates of its own.
    public var feed: String?

    public init(subscription: String, seq: UInt64, value: JSONValue?, feed: String? = nil) {
        self.subscription = subscription
        self.seq = seq
        self.value = value
        self.feed = feed
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("feed", ifPresent: feed)
            members.add("seq", seq)
            members.add("subscription", subscription)
            members.add("value", ifPresent: value)
        }
    }

    /// Reads a result; `value` is `nil` when absent (as in `actions` mode). A client that asked
    /// for another mode checks that it is there.
    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a subscribe result")
        self.init(
            subscription: try members.string("subscription"), seq: try members.seq("seq"), value: members.members["value"],
            feed: try members.optionalString("feed")
        )
    }
}

/// The `unsubscribe` result: `{}`.
public struct UnsubscribeResult: MethodResult, Equatable {
    public init() {}

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: "{}".utf8)
    }

    public init(result: JSONValue) throws(RPCError) {
        _ = try ResultReader(result, "an unsubscribe result")
    }
}
