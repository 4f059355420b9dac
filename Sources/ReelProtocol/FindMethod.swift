import ReelJSON

// `find`: every run of seqs at which a condition holds, for conditions that come and go (a cart
// over its limit, a player at 0 hp), where `bisect` finds one edge of one that stays.

extension Method {
    public enum Find: ProtocolMethod {
        public typealias Params = FindParams
        public typealias Result = FindOutcome
        public static let name: MethodName = "find"
        public static let permission = Permission.read
    }
}

/// The params of `find`: `{condition, from?: 1, to?: latest, limit?: 100}`.
public struct FindParams: MethodParams, Equatable {
    public static let defaultLimit = 100
    public static let maxLimit = 10_000

    public var condition: JSONCondition
    public var from: UInt64
    public var to: UInt64?
    public var limit: Int

    public init(condition: JSONCondition, from: UInt64 = 1, to: UInt64? = nil, limit: Int = FindParams.defaultLimit) {
        self.condition = condition
        self.from = from
        self.to = to
        self.limit = limit
    }

    /// - Throws: -32602 when `condition` is missing or does not parse (the message names the
    ///   column), `from` or `to` is not a seq, `from` is past `to`, or `limit` is outside 1…10000.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Find.name, allowed: ["condition", "from", "to", "limit"])
        condition = try reader.condition(method: Method.Find.name, example: "/cart/total > 100")
        from = max(try reader.seq("from") ?? 1, 1)
        to = try reader.seq("to")
        if let to, from > to {
            throw .invalidParams("params.from (\(from)) must not be greater than params.to (\(to))")
        }
        limit = try reader.count("limit", maximum: Self.maxLimit, default: Self.defaultLimit)
    }

    public var jsonValue: JSONValue {
        var members: JSONObject = ["condition": .string(condition.description)]
        if from != 1 { members["from"] = JSONValue(seq: from) }
        if let to { members["to"] = JSONValue(seq: to) }
        if limit != Self.defaultLimit { members["limit"] = .int(Int64(limit)) }
        return .object(members)
    }
}

/// The `find` result: `{ranges: [{from, to?}], through, next?}`: the maximal runs of seqs at
/// which the condition holds, oldest first, clipped to the window searched (`to` left out when it
/// still holds at the latest seq); `through` is the last seq searched; `next`, after `limit` runs,
/// is the `from` that goes on.
public struct FindOutcome: MethodResult, Equatable {
    public struct Range: Sendable, Equatable, JSONWritable {
        public var from: UInt64
        public var to: UInt64?

        public init(from: UInt64, to: UInt64?) {
            self.from = from
            self.to = to
        }

        public func writeJSON(into bytes: inout [UInt8]) {
            bytes.appendJSONObject { members in
                members.add("from", from)
                if let to { members.add("to", to) }
            }
        }
    }

    public var ranges: [Range]
    public var through: UInt64
    public var next: UInt64?

    public init(ranges: [Range], through: UInt64, next: UInt64?) {
        self.ranges = ranges
        self.through = through
        self.next = next
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            if let next { members.add("next", next) }
            members.add("ranges", ranges)
            members.add("through", through)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a find result")
        var ranges: [Range] = []
        for element in try members.array("ranges") {
            let range = try ResultReader(element, "a range of a find result")
            ranges.append(Range(from: try range.seq("from"), to: try range.optionalSeq("to")))
        }
        self.init(ranges: ranges, through: try members.seq("through"), next: try members.optionalSeq("next"))
    }
}
