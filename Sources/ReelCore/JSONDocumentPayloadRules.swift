import ReelJSON

/// The stock store's checks of a payload's shape at dispatch: a payload that cannot be what its
/// type means is refused (1001) with a message that shows the right shape, instead of being folded
/// into something nobody meant.
///
/// - `merge` takes an object. RFC 7396 lets any other value replace the whole document, so a
///   `merge` without a payload (`null`) or with a string would wipe the state: replacing the root
///   is `set` with the path `""`, which says so. A payload of exactly `{path, value}` with a JSON
///   Pointer for `path` is `set`'s shape, refused rather than merged as two top-level members.
/// - `set`, `remove`, `increment` and `append` take an object of their own members only: an
///   `increment` with `value` instead of `by` would otherwise add 1 and say nothing.
///
/// Middleware, not the reducer, so that replay folds an existing history exactly as before (these
/// payloads were accepted once, and their actions stay in the log); only new dispatches are checked.
public struct JSONDocumentPayloadRules: Middleware {
    public typealias State = JSONValue

    public init() {}

    /// The members each `{path, …}` type takes (`path` required, the others as the reducer needs):
    /// compared name by name, for every dispatch of these types (a dictionary of sets hashed the
    /// type and each member, and the check built an array of the unknown ones).
    private static let pathAndValue = ["path", "value"]
    private static let pathOnly = ["path"]
    private static let pathAndBy = ["path", "by"]

    private static func members(of type: String) -> [String]? {
        switch type {
        case "set", "append": pathAndValue
        case "remove": pathOnly
        case "increment": pathAndBy
        default: nil
        }
    }

    public func process(_ action: Action, state: JSONValue, context: DispatchContext) throws(ReducerError) -> Action {
        switch action.type {
        case "merge":
            try Self.checkMerge(action.payload)
        case "patch":
            guard case .array = action.payload else {
                throw Self.refusal("patch", "takes an array of RFC 6902 operations, not \(Self.describe(action.payload))")
            }
        default:
            guard let allowed = Self.members(of: action.type) else { return action }
            try Self.checkMembers(of: action.payload, type: action.type, allowed: allowed)
        }
        return action
    }

    private static func checkMerge(_ payload: JSONValue) throws(ReducerError) {
        guard case .object(let members) = payload else {
            throw refusal(
                "merge",
                "takes an object (an RFC 7396 merge patch, where null removes a member), not \(describe(payload)); to replace the whole state, use set with the path \"\" ({\"path\":\"\",\"value\":…})"
            )
        }
        if members.count == 2, case .string(let path)? = members["path"], members["value"] != nil,
            path.isEmpty || path.hasPrefix("/")
        {
            throw refusal(
                "merge",
                "takes the merge patch itself, not {path, value} (set's payload: use set, or merge a patch such as {\"user\":{\"theme\":\"dark\"}} for {\"path\":\"/user\",\"value\":{\"theme\":\"dark\"}})"
            )
        }
    }

    private static func checkMembers(of payload: JSONValue, type: String, allowed: [String]) throws(ReducerError) {
        guard case .object(let members) = payload else {
            throw refusal(type, "takes an object, not \(describe(payload))")
        }
        // The common case (every member known) costs a comparison or two per member.
        guard members.contains(where: { !allowed.contains($0.key) }) else { return }
        let names = members.keys.filter { !allowed.contains($0) }.sorted().map { "'\($0)'" }.joined(separator: ", ")
        throw refusal(type, "does not take \(names)")
    }

    /// The refusal, with the type's members and example from its description.
    private static func refusal(_ type: String, _ problem: String) -> ReducerError {
        var message = "\(type) \(problem)"
        if let description = JSONDocumentReducer.descriptions.first(where: { $0.type == type }) {
            if let allowed = members(of: type) {
                let shape = ["path"] + allowed.filter { $0 != "path" }.sorted()
                message += "; its payload is {\(shape.joined(separator: ", "))}"
            }
            message += ", for example: reel dispatch \(type) '\(description.example.jsonString)'"
        }
        return ReducerError(.invalidPayload, message)
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null (no payload)"
        case .object: "an object"
        case .array: "an array"
        default: "the \(value.typeName) \(value.jsonString.prefix(40))"
        }
    }
}
