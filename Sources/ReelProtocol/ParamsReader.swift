import ReelCore
import ReelJSON

// Shared reading of named params, so that every method words the same mistake the same way:
// "params.<name> must be <what>, not <what was sent>".
//
// Two rules hold for every method:
// - Unknown members are refused, not ignored. A misspelt optional member ("expectedseq") would
//   otherwise silently turn off what the client asked for — here, the optimistic concurrency check.
// - A member set to `null` counts as absent. Many JSON encoders write `null` for an unset optional;
//   refusing it would buy nothing, since `null` is never a meaningful value of any param.

/// The named params of one call, checked against the members the method takes.
struct ParamsReader {
    private let members: JSONObject

    /// - Parameters:
    ///   - params: The request's `params`: an object, or `nil` when absent.
    ///   - method: The method, for messages.
    ///   - allowed: Every member the method takes.
    /// - Throws: -32602 for positional (array) params or an unknown member.
    init(_ params: JSONValue?, method: MethodName, allowed: [String]) throws(RPCError) {
        switch params {
        case nil, .null?:
            members = [:]
        case .object(let object)?:
            members = object
        case .array?:
            throw .invalidParams(
                "\(method.rawValue) takes named params (an object), not an array; positional params are not supported")
        case let other?:
            throw .invalidParams("params must be an object, not \(other.described)")
        }
        // The first unknown member in sorted order, for a stable message; no sorting unless one is there.
        if let key = members.keys.filter({ !allowed.contains($0) }).min() {
            let takes = allowed.isEmpty ? "it takes no params" : "it takes \(allowed.joined(separator: ", "))"
            throw .invalidParams("\(method.rawValue) has no param \(JSONValue.string(key).jsonString) (\(takes))")
        }
    }

    /// The member `name`, or `nil` when it is absent or `null`.
    subscript(name: String) -> JSONValue? {
        guard let value = members[name], !value.isNull else { return nil }
        return value
    }

    /// An optional seq member.
    func seq(_ name: String) throws(RPCError) -> UInt64? {
        guard let value = self[name] else { return nil }
        return try readSeq(value, label: "params.\(name)")
    }

    /// A seq member that must be present.
    func requiredSeq(_ name: String, method: MethodName) throws(RPCError) -> UInt64 {
        guard let value = self[name] else {
            throw .invalidParams("\(method.rawValue) needs params.\(name), a seq (a non-negative integer)")
        }
        return try readSeq(value, label: "params.\(name)")
    }

    /// An optional count member, such as `limit`: an integer in `1...maximum`, `defaultValue`
    /// when absent.
    func count(_ name: String, maximum: Int, default defaultValue: Int) throws(RPCError) -> Int {
        guard let value = self[name] else { return defaultValue }
        guard let count = value.intValue, (1...Int64(maximum)).contains(count) else {
            throw .invalidParams("params.\(name) must be an integer from 1 to \(maximum), not \(value.described)")
        }
        return Int(count)
    }

    /// The `condition` member, in `reel bisect`'s language; `example` shows one in the message
    /// when it is missing.
    func condition(method: MethodName, example: String) throws(RPCError) -> JSONCondition {
        guard let text = try string("condition") else {
            throw .invalidParams("\(method.rawValue) needs params.condition, such as \(JSONValue.string(example).jsonString)")
        }
        do {
            return try JSONCondition(parsing: text)
        } catch {
            throw .invalidParams("params.condition: \(error.description)")
        }
    }

    /// An optional boolean member.
    func bool(_ name: String) throws(RPCError) -> Bool? {
        guard let value = self[name] else { return nil }
        guard case .bool(let flag) = value else {
            throw .invalidParams("params.\(name) must be true or false, not \(value.described)")
        }
        return flag
    }

    /// An optional string member.
    func string(_ name: String) throws(RPCError) -> String? {
        guard let value = self[name] else { return nil }
        guard case .string(let string) = value else {
            throw .invalidParams("params.\(name) must be a string, not \(value.described)")
        }
        return string
    }

    /// An optional JSON Pointer member; absent means the whole state.
    func pointer(_ name: String) throws(RPCError) -> JSONPointer {
        try optionalPointer(name) ?? .root
    }

    /// An optional JSON Pointer member; `nil` when absent.
    func optionalPointer(_ name: String) throws(RPCError) -> JSONPointer? {
        guard let value = self[name] else { return nil }
        return try readPointer(value, label: "params.\(name)")
    }
}

/// Reads a seq: a non-negative integer. A number written with a zero fraction (`5.0`) is taken,
/// since JSON does not tell integers from other numbers and some encoders write every number
/// that way; `5.5`, `-1` and `"5"` are not.
func readSeq(_ value: JSONValue, label: String) throws(RPCError) -> UInt64 {
    guard let integer = value.intValue, integer >= 0 else {
        throw .invalidParams("\(label) must be a non-negative integer (a seq), not \(value.described)")
    }
    return UInt64(integer)
}

/// Reads a JSON Pointer given as a string.
func readPointer(_ value: JSONValue, label: String) throws(RPCError) -> JSONPointer {
    guard case .string(let string) = value else {
        throw .invalidParams(
            "\(label) must be a JSON Pointer string (RFC 6901) such as \"\" or \"/todos/0\", not \(value.described)")
    }
    do {
        return try JSONPointer(string)
    } catch {
        throw .invalidParams("\(label) is not a valid JSON Pointer (RFC 6901): \(error.message)")
    }
}

/// Reads an action object, `{type, payload?, version?}`; an absent payload is `null`, an absent
/// version the latest the store's reducers declare.
func readAction(_ value: JSONValue, label: String) throws(RPCError) -> Action {
    guard case .object(let members) = value else {
        throw .invalidParams("\(label) must be an action object {\"type\": …, \"payload\": …}, not \(value.described)")
    }
    if let key = members.keys.filter({ $0 != "type" && $0 != "payload" && $0 != "version" }).min() {
        throw .invalidParams(
            "\(label) has an unknown member \(JSONValue.string(key).jsonString) (an action has type, payload and version)")
    }
    var version: Int?
    if let stated = members["version"] {
        guard let number = actionVersion(stated) else {
            throw .invalidParams("\(label).version must be an integer from 1 (the payload's version), not \(stated.described)")
        }
        version = number
    }
    guard let type = members["type"] else {
        throw .invalidParams("\(label).type is missing (the action type, such as \"set\")")
    }
    guard case .string(let name) = type, !name.isEmpty else {
        throw .invalidParams("\(label).type must be a non-empty string, not \(type.described)")
    }
    return Action(type: name, payload: members["payload"] ?? .null, version: version)
}

/// An action's `version` member: an integer from 1, or `nil` when it is not one.
func actionVersion(_ value: JSONValue) -> Int? {
    guard let number = value.intValue, number >= 1, let version = Int(exactly: number) else { return nil }
    return version
}

extension JSONValue {
    /// The value as a message names it after "not": `-1`, `1.5`, `null`, `true`, `the string "5"`,
    /// `an array`. Short strings are quoted so that `"5"` for `5` is visible; long ones are not,
    /// to keep messages short and free of whatever the client put there.
    var described: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .int, .double: jsonString
        case .string(let value): value.utf8.count <= 40 ? "the string \(jsonString)" : "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
