import ReelCore
import ReelJSON

/// The params of `history`: `{from?: 1, to?: latest, limit?: 100, types?: [string], correlationId?:
/// string, changed?: PATH, order?: "asc"}`.
///
/// A page holds at most `limit` actions, oldest first (`order: "asc"`) or newest first
/// (`"desc"`); when the range holds more, the result's `next` is the `from` (asc) or the `to`
/// (desc) of the following page.
public struct HistoryParams: Sendable, Equatable {
    /// The largest `limit`: a page is one response line, and the default line limit of readers
    /// is 1 MiB, so pages stay small and clients follow `next`.
    public static let maxLimit = 10_000
    /// The `limit` when none is given.
    public static let defaultLimit = 100

    /// The first seq of the range (inclusive). `0` is taken and means the same as `1`: seq 0
    /// is the initial state, which no action produced.
    public var from: UInt64
    /// The last seq of the range (inclusive); `nil` for the latest.
    public var to: UInt64?
    /// The most actions in the page, `1...maxLimit`.
    public var limit: Int
    /// Only actions of these types; `nil` for all.
    public var types: Set<String>?
    /// Only actions whose meta carries this correlation id; `nil` for all.
    public var correlationId: String?
    /// Newest first (`order: "desc"`) rather than oldest first.
    public var newestFirst: Bool
    /// Only actions that changed the value at this pointer (absent counting as a value); `nil`
    /// for all.
    public var changed: JSONPointer?
    /// The branch to read instead of the main history (its actions after the fork; the main
    /// history's before).
    public var branch: String?

    /// - Parameters:
    ///   - from: The first seq.
    ///   - to: The last seq, or `nil` for the latest.
    ///   - limit: The most actions in the page.
    ///   - types: The action types to keep, or `nil` for all.
    ///   - correlationId: The correlation id the kept actions' meta carries, or `nil` for all.
    ///   - newestFirst: Newest first rather than oldest first.
    public init(
        from: UInt64 = 1, to: UInt64? = nil, limit: Int = HistoryParams.defaultLimit, types: Set<String>? = nil,
        correlationId: String? = nil, newestFirst: Bool = false, changed: JSONPointer? = nil, branch: String? = nil
    ) {
        self.changed = changed
        self.branch = branch
        self.from = from
        self.to = to
        self.limit = limit
        self.types = types
        self.correlationId = correlationId
        self.newestFirst = newestFirst
    }

    /// Reads and checks the params of a `history` call.
    ///
    /// - Parameter params: The request's `params`, `nil` when absent.
    /// - Throws: -32602 for a `from` or `to` that is not a seq, `from` after `to`, a `limit`
    ///   outside `1...10000`, a `types` that is not a non-empty array of strings, a
    ///   `correlationId` that is not a string of at most 256 bytes, a `changed` that is not a
    ///   JSON Pointer, an `order` other than `"asc"`
    ///   or `"desc"`, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(
            params, method: Method.History.name, allowed: ["from", "to", "limit", "types", "correlationId", "changed", "order", "branch"]
        )
        from = try reader.seq("from") ?? 1
        to = try reader.seq("to")
        if let to, from > to {
            throw .invalidParams("params.from (\(from)) must not be greater than params.to (\(to))")
        }
        limit = try reader.count("limit", maximum: Self.maxLimit, default: Self.defaultLimit)
        if let value = reader["types"] {
            guard case .array(let elements) = value else {
                throw .invalidParams("params.types must be an array of action types, not \(value.described)")
            }
            guard !elements.isEmpty else {
                throw .invalidParams("params.types must list at least one action type (omit it for every type)")
            }
            var types = Set<String>()
            for (index, element) in elements.enumerated() {
                guard case .string(let type) = element else {
                    throw .invalidParams("params.types[\(index)] must be a string, not \(element.described)")
                }
                types.insert(type)
            }
            self.types = types
        } else {
            types = nil
        }
        changed = try reader.optionalPointer("changed")
        correlationId = try reader.string("correlationId")
        if let correlationId, let problem = ActionMeta.problem(with: correlationId, as: .correlationId) {
            throw .invalidParams("params.correlationId \(problem): no action carries a longer one")
        }
        branch = try reader.branch()
        switch reader["order"] {
        case nil, "asc"?: newestFirst = false
        case "desc"?: newestFirst = true
        case let other?: throw .invalidParams("params.order must be \"asc\" or \"desc\", not \(other.described)")
        }
    }

    /// The params as a client sends them; `init(params:)` reads them back. Defaults are omitted
    /// and `types` is sorted, so equal params give equal bytes.
    public var jsonValue: JSONValue {
        var members: JSONObject = [:]
        if from != 1 { members["from"] = JSONValue(seq: from) }
        if let to { members["to"] = JSONValue(seq: to) }
        if limit != Self.defaultLimit { members["limit"] = .int(Int64(limit)) }
        if let types { members["types"] = .array(types.sorted().map(JSONValue.string)) }
        if let correlationId { members["correlationId"] = .string(correlationId) }
        if newestFirst { members["order"] = "desc" }
        if let changed { members["changed"] = .string(changed.description) }
        if let branch { members["branch"] = .string(branch) }
        return .object(members)
    }
}
