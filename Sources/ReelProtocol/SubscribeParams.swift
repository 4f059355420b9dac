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

/// The params of `subscribe`: `{path?: "", since?: seq, mode?: "value" | "patch" | "actions", shared?: false}`.
public struct SubscribeParams: Sendable, Equatable {
    /// The part of the state to follow; the root by default.
    public var path: JSONPointer
    /// Resume after this seq: first deliver what was missed since it, then live updates.
    public var since: UInt64?
    /// What updates carry; ``SubscriptionMode/value`` by default.
    public var mode: SubscriptionMode
    /// A branch to follow instead of the main history.
    public var branch: String?
    /// Receive the updates of the subscription's shared feed (``SubscribeParams/feed``) instead
    /// of updates of its own: lines that name the feed, not the subscription, and are the same
    /// bytes for every subscriber of the feed, so that the daemon encodes each once and writes it
    /// to all of them without a copy per subscriber. One shared subscription per feed and
    /// connection; not on a branch.
    public var shared: Bool

    /// - Parameters:
    ///   - path: The part of the state to follow.
    ///   - since: The seq to resume after, or `nil` to start now.
    ///   - mode: What updates carry.
    ///   - branch: A branch to follow instead of the main history.
    ///   - shared: Receive the shared feed's updates (``shared``).
    public init(
        path: JSONPointer = .root, since: UInt64? = nil, mode: SubscriptionMode = .value, branch: String? = nil, shared: Bool = false
    ) {
        self.path = path
        self.since = since
        self.mode = mode
        self.branch = branch
        self.shared = shared
    }

    /// The name of the feed a shared subscription of this mode and path receives: `actions` (in
    /// actions mode every action goes to every subscriber, whatever the path), `value:PATH` or
    /// `patch:PATH`.
    public var feed: String {
        Self.feed(mode: mode, path: path)
    }

    public static func feed(mode: SubscriptionMode, path: JSONPointer) -> String {
        mode == .actions ? "actions" : "\(mode.rawValue):\(path)"
    }

    /// Reads and checks the params of a `subscribe` call.
    ///
    /// - Parameter params: The request's `params`, `nil` when absent.
    /// - Throws: -32602 for a path that is not a JSON Pointer, a `since` that is not a seq, an
    ///   unknown mode, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Subscribe.name, allowed: ["path", "since", "mode", "branch", "shared"])
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
        shared = try reader.bool("shared") ?? false
        if shared, branch != nil {
            throw .invalidParams("params.shared follows the main history's feeds; a branch's subscription has updates of its own (leave shared out)")
        }
    }

    /// The params as a client sends them; `init(params:)` reads them back. Defaults are omitted.
    public var jsonValue: JSONValue {
        var members: JSONObject = [:]
        if !path.isRoot { members["path"] = .string(path.description) }
        if let since { members["since"] = JSONValue(seq: since) }
        if mode != .value { members["mode"] = .string(mode.rawValue) }
        if let branch { members["branch"] = .string(branch) }
        if shared { members["shared"] = true }
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
