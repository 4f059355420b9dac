import ReelCore
import ReelJSON

/// Builders of the `result` of each method, in the exact shapes of SPEC.md.
///
/// Results are plain `JSONValue` objects: their members are written in canonical (sorted) order,
/// which is stable, and only the response envelope around them has a hand-chosen order.
public enum RPCResult {
    /// The `hello` result: `{server: "reeld", version, protocol: 1, seq, reducer: {name, version}, capabilities}`.
    ///
    /// - Parameters:
    ///   - version: The daemon's version, such as `"0.1.0"`.
    ///   - seq: The latest committed seq.
    ///   - reducer: The store's reducer name and version.
    ///   - capabilities: The features the server offers; every one of protocol 1 by default.
    public static func hello(
        version: String, seq: UInt64, reducer: ReducerIdentity, capabilities: [String] = Capability.all
    ) -> JSONValue {
        [
            "server": .string(WireProtocol.serverName),
            "version": .string(version),
            "protocol": .int(Int64(WireProtocol.version)),
            "seq": JSONValue(seq: seq),
            "reducer": ["name": .string(reducer.name), "version": .string(reducer.version)],
            "capabilities": .array(capabilities.map(JSONValue.string)),
        ]
    }

    /// The result of a single-action `dispatch`: `{seq}`, or `{seq, duplicate: true}` when the
    /// idempotency key had been used and `seq` is the original one.
    ///
    /// - Parameters:
    ///   - seq: The action's seq.
    ///   - duplicate: Whether this answers a retry from its idempotency key.
    public static func dispatch(seq: UInt64, duplicate: Bool = false) -> JSONValue {
        var members: [String: JSONValue] = ["seq": JSONValue(seq: seq)]
        if duplicate { members["duplicate"] = true }
        return .object(members)
    }

    /// The result of a `dispatch`, in the form the client used: `{seq}` for `action`, and for
    /// `actions` `{seqs: [first, …, last]}` listing every seq (SPEC), so a client pairs each of its
    /// actions with its seq by position. A duplicate adds `duplicate: true` in both forms.
    ///
    /// - Parameters:
    ///   - seqs: The consecutive seqs the actions got (or, for a duplicate, had got).
    ///   - duplicate: Whether this answers a retry from its idempotency key.
    ///   - batch: Whether the client sent `actions` (``DispatchParams/isBatch``).
    public static func dispatch(seqs: ClosedRange<UInt64>, duplicate: Bool = false, batch: Bool) -> JSONValue {
        guard batch else { return dispatch(seq: seqs.lowerBound, duplicate: duplicate) }
        var members: [String: JSONValue] = ["seqs": .array(seqs.map { JSONValue(seq: $0) })]
        if duplicate { members["duplicate"] = true }
        return .object(members)
    }

    /// The `get` result: `{seq, value}`.
    ///
    /// - Parameters:
    ///   - seq: The seq the state was read at.
    ///   - value: The value at the requested path.
    public static func get(seq: UInt64, value: JSONValue) -> JSONValue {
        ["seq": JSONValue(seq: seq), "value": value]
    }

    /// The `subscribe` result: `{subscription, seq, value}`, without `value` in `actions` mode.
    ///
    /// - Parameters:
    ///   - subscription: The id the client passes to `unsubscribe` and finds in every `update`.
    ///   - seq: The seq the subscription starts at: updates follow from the next one.
    ///   - value: The value at the path at `seq`; `nil` in `actions` mode.
    public static func subscribe(subscription: String, seq: UInt64, value: JSONValue?) -> JSONValue {
        var members: [String: JSONValue] = ["subscription": .string(subscription), "seq": JSONValue(seq: seq)]
        if let value { members["value"] = value }
        return .object(members)
    }

    /// The `unsubscribe` result: `{}`.
    public static let unsubscribe: JSONValue = .object([:])

    /// The `history` result: `{actions: […], next?}`.
    ///
    /// - Parameters:
    ///   - actions: The page of logged actions, each written as ``action(_:)``.
    ///   - next: The `from` of the following page when the page was cut by its limit; `nil` omits it.
    public static func history(actions: [ActionEnvelope], next: UInt64?) -> JSONValue {
        var members: [String: JSONValue] = ["actions": .array(actions.map(action))]
        if let next { members["next"] = JSONValue(seq: next) }
        return .object(members)
    }

    /// One logged action as `history` and `update` (mode `actions`) show it:
    /// `{seq, type, payload, time, peer: {uid, gid, pid}}`.
    ///
    /// `payload` is always present (`null` when the action had none). `time` is an RFC 3339 UTC
    /// string with nine fractional digits (`Timestamp.rfc3339`), which people read and
    /// sort as text and which keeps every nanosecond. The idempotency key is left out: it belongs
    /// to the client that sent it, and other clients have no use for it.
    ///
    /// - Parameter envelope: The logged action.
    public static func action(_ envelope: ActionEnvelope) -> JSONValue {
        [
            "seq": JSONValue(seq: envelope.seq),
            "type": .string(envelope.action.type),
            "payload": envelope.action.payload,
            "time": .string(envelope.time.rfc3339),
            "peer": [
                "uid": .int(Int64(envelope.peer.uid)),
                "gid": .int(Int64(envelope.peer.gid)),
                "pid": .int(Int64(envelope.peer.pid)),
            ],
        ]
    }

    /// The `diff` result: `{patch: [RFC 6902 operations]}`.
    ///
    /// - Parameter patch: The patch turning the state at `from` into the state at `to`.
    public static func diff(patch: JSONPatch) -> JSONValue {
        ["patch": patch.jsonValue]
    }

    /// The `replay` result: `{value}`, plus `refused: [{seq, reason}]` when some later actions
    /// were refused by the reducers once the skipped ones were gone (each then changed nothing).
    /// The member is an addition to SPEC's shape, written only when non-empty, so a what-if that
    /// changes which actions apply says so instead of silently dropping them.
    ///
    /// - Parameters:
    ///   - value: The value at the path in the what-if state.
    ///   - refused: The actions refused during the replay, with the reducers' reasons.
    public static func replay(value: JSONValue, refused: [(seq: UInt64, reason: String)] = []) -> JSONValue {
        var members: [String: JSONValue] = ["value": value]
        if !refused.isEmpty {
            members["refused"] = .array(refused.map { ["seq": JSONValue(seq: $0.seq), "reason": .string($0.reason)] })
        }
        return .object(members)
    }

    /// The `stats` result: `{seq, …}`, the server's figures passed through with `seq` set.
    ///
    /// - Parameters:
    ///   - seq: The latest committed seq; it replaces any `seq` in `figures`.
    ///   - figures: Counters and figures of the server's choosing.
    public static func stats(seq: UInt64, figures: [String: JSONValue] = [:]) -> JSONValue {
        var members = figures
        members["seq"] = JSONValue(seq: seq)
        return .object(members)
    }
}
