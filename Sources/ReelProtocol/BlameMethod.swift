import ReelCore
import ReelJSON

// `blame`: for each leaf of the state under a path, the action that last changed it — who set
// this value, and when.

extension Method {
    public enum Blame: ProtocolMethod {
        public typealias Params = BlameParams
        public typealias Result = BlameOutcome
        public static let name: MethodName = "blame"
        public static let permission = Permission.read
    }
}

/// The params of `blame`: `{path?: "", at?: latest, limit?: 1000, after?: PATH}`.
public struct BlameParams: MethodParams, Equatable {
    public static let defaultLimit = 1_000
    public static let maxLimit = 10_000

    public var path: JSONPointer
    /// The seq whose state is blamed; `nil` for the latest.
    public var at: UInt64?
    /// The most leaves in the page.
    public var limit: Int
    /// The page starts after this leaf (the `next` of the page before).
    public var after: JSONPointer?

    public init(path: JSONPointer = .root, at: UInt64? = nil, limit: Int = BlameParams.defaultLimit, after: JSONPointer? = nil) {
        self.path = path
        self.at = at
        self.limit = limit
        self.after = after
    }

    /// - Throws: -32602 for a `path` or `after` that is not a JSON Pointer, an `at` that is not a
    ///   seq, a `limit` outside 1…10000, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Blame.name, allowed: ["path", "at", "limit", "after"])
        path = try reader.pointer("path")
        at = try reader.seq("at")
        limit = try reader.count("limit", maximum: Self.maxLimit, default: Self.defaultLimit)
        after = try reader.optionalPointer("after")
    }

    public var jsonValue: JSONValue {
        var members: JSONObject = [:]
        if !path.isRoot { members["path"] = .string(path.description) }
        if let at { members["at"] = JSONValue(seq: at) }
        if limit != Self.defaultLimit { members["limit"] = .int(Int64(limit)) }
        if let after { members["after"] = .string(after.description) }
        return .object(members)
    }
}

/// The `blame` result: `{seq, entries: [{path, seq, type?, time?, peer?}], next?}`. An entry's
/// `seq` is the action that last changed the leaf at or before the result's `seq`, with its type,
/// time and peer; `0` (and nothing else) for a leaf no action changed, as the initial state has
/// it. `next`, when more leaves follow, is the `after` of the next page.
public struct BlameOutcome: MethodResult, Equatable {
    public struct Entry: Sendable, Equatable, JSONWritable {
        public var path: JSONPointer
        /// The action that last changed the leaf, `nil` for none.
        public var seq: UInt64?
        public var type: String?
        public var time: Timestamp?
        public var peer: Peer?

        public init(path: JSONPointer, seq: UInt64?, type: String? = nil, time: Timestamp? = nil, peer: Peer? = nil) {
            self.path = path
            self.seq = seq
            self.type = type
            self.time = time
            self.peer = peer
        }

        public func writeJSON(into bytes: inout [UInt8]) {
            bytes.appendJSONObject { members in
                members.add("path", JSONValue.string(path.description))
                if let peer { members.add("peer", peer.wireJSON) }
                members.add("seq", seq ?? 0)
                if let time { members.add("time", JSONValue.string(time.rfc3339)) }
                if let type { members.add("type", JSONValue.string(type)) }
            }
        }
    }

    public var seq: UInt64
    public var entries: [Entry]
    public var next: JSONPointer?

    public init(seq: UInt64, entries: [Entry], next: JSONPointer?) {
        self.seq = seq
        self.entries = entries
        self.next = next
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("entries", entries)
            if let next { members.add("next", JSONValue.string(next.description)) }
            members.add("seq", seq)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a blame result")
        var entries: [Entry] = []
        for element in try members.array("entries") {
            let entry = try ResultReader(element, "an entry of a blame result")
            let path = try readPointer(.string(try entry.string("path")), label: "an entry's path")
            let seq = try entry.seq("seq")
            guard seq > 0 else {
                entries.append(Entry(path: path, seq: nil))
                continue
            }
            let time = Timestamp(rfc3339: try entry.string("time"))
            guard let time else { throw .invalidRequest("the entry of \(path) in a blame result has a malformed time") }
            entries.append(Entry(path: path, seq: seq, type: try entry.string("type"), time: time, peer: try Peer(wire: element.objectValue?["peer"])))
        }
        let next: JSONPointer?
        if case .string(let text)? = result.objectValue?["next"] {
            next = try readPointer(.string(text), label: "the next of a blame result")
        } else {
            next = nil
        }
        self.init(seq: try members.seq("seq"), entries: entries, next: next)
    }
}

extension Peer {
    /// The wire shape of a peer: `{uid, gid, pid, exe?}`.
    public var wireJSON: JSONValue {
        var members: JSONObject = ["uid": .int(Int64(uid)), "gid": .int(Int64(gid)), "pid": .int(Int64(pid))]
        if let exe { members["exe"] = .string(exe) }
        return .object(members)
    }

    /// Reads ``wireJSON``.
    init(wire json: JSONValue?) throws(RPCError) {
        guard case .object(let members)? = json,
            let uid = members["uid"]?.intValue.flatMap(UInt32.init(exactly:)),
            let gid = members["gid"]?.intValue.flatMap(UInt32.init(exactly:)),
            let pid = members["pid"]?.intValue.flatMap(Int32.init(exactly:))
        else {
            throw .invalidRequest("a peer must be {uid, gid, pid}")
        }
        self.init(uid: uid, gid: gid, pid: pid, exe: members["exe"]?.stringValue)
    }
}
