import ReelJSON

/// How a daemon following a shared log stands (`reeld --shared-log`), in `hello` and `stats` as
/// `sharedLog: {location, latestSeq, lag, reachable, …}`. Absent from a daemon without one.
public struct SharedLogReport: Sendable, Equatable {
    /// The log, without secrets (`postgres://reel:***@db/reel`).
    public var location: String
    /// The latest seq this node knows the shared log to have.
    public var latestSeq: UInt64
    /// How many seqs this node's copy is behind ``latestSeq``.
    public var lag: UInt64
    /// Whether the last call to the shared log succeeded (`nil` before the first).
    public var reachable: Bool?
    /// The last failure to reach it, while unreachable.
    public var error: String?
    /// Why this node refuses dispatches: its copy disagrees with the log.
    public var refusal: String?
    /// Groups that lost the race to another node and were evaluated again (`stats` only).
    public var conflicts: UInt64?
    /// Actions taken by other nodes and applied here (`stats` only).
    public var followed: UInt64?
    /// How long the last append took, in microseconds (`stats` only).
    public var lastAppendMicros: Int?

    public init(
        location: String, latestSeq: UInt64, lag: UInt64, reachable: Bool?, error: String? = nil, refusal: String? = nil,
        conflicts: UInt64? = nil, followed: UInt64? = nil, lastAppendMicros: Int? = nil
    ) {
        self.location = location
        self.latestSeq = latestSeq
        self.lag = lag
        self.reachable = reachable
        self.error = error
        self.refusal = refusal
        self.conflicts = conflicts
        self.followed = followed
        self.lastAppendMicros = lastAppendMicros
    }

    public var jsonValue: JSONValue {
        var members: JSONObject = [
            "location": .string(location), "latestSeq": JSONValue(seq: latestSeq), "lag": JSONValue(seq: lag),
        ]
        if let reachable { members["reachable"] = .bool(reachable) }
        if let error { members["error"] = .string(error) }
        if let refusal { members["refusal"] = .string(refusal) }
        if let conflicts { members["conflicts"] = JSONValue(seq: conflicts) }
        if let followed { members["followed"] = JSONValue(seq: followed) }
        if let lastAppendMicros { members["lastAppendMicros"] = .int(Int64(lastAppendMicros)) }
        return .object(members)
    }

    public init(json: JSONValue) throws(RPCError) {
        let reader = try ResultReader(json, "a sharedLog report")
        func optionalString(_ key: String) -> String? { reader.members[key]?.stringValue }
        func optionalCount(_ key: String) -> UInt64? { reader.members[key]?.intValue.flatMap(UInt64.init(exactly:)) }
        self.init(
            location: try reader.string("location"), latestSeq: try reader.seq("latestSeq"), lag: try reader.seq("lag"),
            reachable: reader.members["reachable"]?.boolValue, error: optionalString("error"), refusal: optionalString("refusal"),
            conflicts: optionalCount("conflicts"), followed: optionalCount("followed"),
            lastAppendMicros: reader.members["lastAppendMicros"]?.intValue.flatMap(Int.init(exactly:))
        )
    }
}
