import ReelCore
import ReelJSON

// Results of the methods that read the state and the log: `get`, `history`, `diff`, `replay`.

/// A value as it was at a seq: the result of `get` (`{seq, value}`), and each element of a typed
/// state stream.
public struct Snapshot<Value> {
    /// The seq whose state the value comes from.
    public var seq: UInt64
    /// The state, or the slice of it that was asked for.
    public var value: Value

    /// - Parameters:
    ///   - seq: The seq.
    ///   - value: The value at that seq.
    public init(seq: UInt64, value: Value) {
        self.seq = seq
        self.value = value
    }
}

extension Snapshot: Sendable where Value: Sendable {}
extension Snapshot: Equatable where Value: Equatable {}

extension Snapshot: JSONWritable, MethodResult where Value == JSONValue {
    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("seq", seq)
            members.add("value", value)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a get result")
        self.init(seq: try members.seq("seq"), value: try members.value("value"))
    }
}

/// One page of `history`, oldest first: `{actions: […], next?}`.
public struct HistoryPage: MethodResult, Equatable {
    /// The actions, with their seq, time and dispatcher.
    public var actions: [ActionEnvelope]
    /// The `from` of the next page, or `nil` when this page holds the last matching action.
    public var next: UInt64?

    /// - Parameters:
    ///   - actions: The actions of the page.
    ///   - next: The `from` of the next page, or `nil`.
    public init(actions: [ActionEnvelope], next: UInt64?) {
        self.actions = actions
        self.next = next
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("actions") { bytes in ActionEnvelope.writeWire(actions, into: &bytes) }
            members.add("next", ifPresent: next)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a history result")
        var actions: [ActionEnvelope] = []
        for element in try members.array("actions") { actions.append(try ActionEnvelope(wire: element)) }
        self.init(actions: actions, next: try members.optionalSeq("next"))
    }
}

/// The `diff` result: `{patch: [RFC 6902 operations]}`, the patch that turns the state at `from`
/// into the state at `to`.
public struct DiffResult: MethodResult, Equatable {
    public var patch: JSONPatch

    public init(patch: JSONPatch) {
        self.patch = patch
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in members.add("patch", patch) }
    }

    public init(result: JSONValue) throws(RPCError) {
        let patch = try ResultReader(result, "a diff result").value("patch")
        do {
            self.init(patch: try JSONPatch(patch))
        } catch {
            throw .invalidRequest("a diff result's patch is not a JSON Patch: \(error.message)")
        }
    }
}

/// The result of `replay`: `{value}`, what the state would be without the skipped actions, plus
/// `refused: [{seq, reason}]` when some later actions were refused by the reducers once the
/// skipped ones were gone (each then changed nothing). `refused` is an addition to protocol 1's first shape,
/// written only when non-empty, so a what-if that changes which actions apply says so.
public struct ReplayResult: MethodResult, Equatable {
    /// The what-if value at the requested path.
    public var value: JSONValue
    /// Later actions that no longer applied without the skipped ones.
    public var refused: [SeqReason]

    /// - Parameters:
    ///   - value: The what-if value.
    ///   - refused: The actions refused during the replay.
    public init(value: JSONValue, refused: [SeqReason] = []) {
        self.value = value
        self.refused = refused
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            if !refused.isEmpty { members.add("refused", refused) }
            members.add("value", value)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a replay result")
        self.init(value: try members.value("value"), refused: try SeqReason.list(members.members["refused"]))
    }
}

extension ActionEnvelope {
    /// Writes a logged action in its wire shape, `{meta?, payload, peer: {exe?, gid, pid, uid},
    /// seq, time, type, version?}` (members in canonical order): the elements of a `history` page
    /// and of an `update` in `actions` mode, and the lines of `reel export`. ``init(wire:)`` reads
    /// it back.
    ///
    /// `payload` is always present (`null` when the action had none); `meta` only when the client
    /// gave one, `peer.exe` only when known, `version` only when it is not 1. `time` is an RFC 3339 UTC string with nine fractional
    /// digits, which people read and sort as text and which keeps every nanosecond. The
    /// idempotency key is left out: it belongs to the client that sent it.
    public func writeWire(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            if let meta { members.add("meta") { bytes in meta.writeWire(into: &bytes) } }
            members.add("payload", action.payload)
            members.add("peer") { bytes in
                bytes.appendJSONObject { peerMembers in
                    peerMembers.add("exe", ifPresent: peer.exe)
                    peerMembers.add("gid", Int64(peer.gid))
                    peerMembers.add("pid", Int64(peer.pid))
                    peerMembers.add("uid", Int64(peer.uid))
                }
            }
            members.add("seq", seq)
            members.add("time", time.rfc3339)
            members.add("type", action.type)
            if version != 1 { members.add("version", Int64(version)) }
        }
    }

    /// Writes logged actions as a JSON array of ``writeWire(into:)`` objects.
    public static func writeWire(_ envelopes: [ActionEnvelope], into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "["))
        for (position, envelope) in envelopes.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            envelope.writeWire(into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

extension ActionEnvelope {
    /// The wire shape of ``writeWire(into:)`` as a JSON value, for what builds JSON values around
    /// it (an `update` notification, `reel log --json`). Same text when serialized.
    public var wireJSON: JSONValue {
        var members: JSONObject = [
            "seq": JSONValue(seq: seq),
            "type": .string(action.type),
            "payload": action.payload,
            "time": .string(time.rfc3339),
            "peer": peer.wireJSON,
        ]
        if let meta { members["meta"] = meta.jsonValue }
        if version != 1 { members["version"] = .int(Int64(version)) }
        return .object(members)
    }
}
