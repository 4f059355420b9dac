import ReelJSON

/// What the `update` notifications of a subscription carry.
public enum SubscriptionMode: String, Sendable, CaseIterable {
    /// The whole value at the path, each time it changes (updates may be coalesced).
    case value
    /// An RFC 6902 patch from the previously delivered value (updates may be coalesced).
    case patch
    /// Every accepted action, in order, none skipped.
    case actions
}

/// The params of `subscribe`: `{path?: "", since?: seq, mode?: "value" | "patch" | "actions"}`.
public struct SubscribeParams: Sendable, Equatable {
    /// The part of the state to follow; the root by default.
    public var path: JSONPointer
    /// Resume after this seq: first deliver what was missed since it, then live updates.
    public var since: UInt64?
    /// What updates carry; ``SubscriptionMode/value`` by default.
    public var mode: SubscriptionMode
    /// A branch to follow instead of the main history.
    public var branch: String?

    /// - Parameters:
    ///   - path: The part of the state to follow.
    ///   - since: The seq to resume after, or `nil` to start now.
    ///   - mode: What updates carry.
    ///   - branch: A branch to follow instead of the main history.
    public init(path: JSONPointer = .root, since: UInt64? = nil, mode: SubscriptionMode = .value, branch: String? = nil) {
        self.path = path
        self.since = since
        self.mode = mode
        self.branch = branch
    }

    /// Reads and checks the params of a `subscribe` call.
    ///
    /// - Parameter params: The request's `params`, `nil` when absent.
    /// - Throws: -32602 for a path that is not a JSON Pointer, a `since` that is not a seq, an
    ///   unknown mode, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Subscribe.name, allowed: ["path", "since", "mode", "branch"])
        path = try reader.pointer("path")
        since = try reader.seq("since")
        branch = try reader.branch()
        if let value = reader["mode"] {
            guard case .string(let name) = value, let mode = SubscriptionMode(rawValue: name) else {
                throw .invalidParams("params.mode must be \"value\", \"patch\" or \"actions\", not \(value.described)")
            }
            self.mode = mode
        } else {
            mode = .value
        }
    }

    /// The params as a client sends them; `init(params:)` reads them back. Defaults are omitted.
    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = [:]
        if !path.isRoot { members["path"] = .string(path.description) }
        if let since { members["since"] = JSONValue(seq: since) }
        if mode != .value { members["mode"] = .string(mode.rawValue) }
        if let branch { members["branch"] = .string(branch) }
        return .object(members)
    }
}

/// The params of `unsubscribe`: `{subscription}`, the id that `subscribe` returned.
public struct UnsubscribeParams: Sendable, Equatable {
    /// The subscription to end.
    public var subscription: String

    /// - Parameter subscription: The id `subscribe` returned.
    public init(subscription: String) {
        self.subscription = subscription
    }

    /// Reads and checks the params of an `unsubscribe` call.
    ///
    /// - Parameter params: The request's `params`.
    /// - Throws: -32602 when `subscription` is missing, not a string or empty, or for an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Unsubscribe.name, allowed: ["subscription"])
        guard let subscription = try reader.string("subscription") else {
            throw .invalidParams("unsubscribe needs params.subscription, the id that subscribe returned")
        }
        guard !subscription.isEmpty else {
            throw .invalidParams("params.subscription must not be empty; pass the id that subscribe returned")
        }
        self.subscription = subscription
    }

    /// The params as a client sends them; `init(params:)` reads them back.
    public var jsonValue: JSONValue {
        ["subscription": .string(subscription)]
    }
}
