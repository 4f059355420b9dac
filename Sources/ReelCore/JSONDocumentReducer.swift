import ReelJSON

/// The stock reducer: the state is one JSON document and actions are mutations of it, so a store is
/// useful with no code at all.
///
/// | type | payload | effect |
/// | --- | --- | --- |
/// | `patch` | RFC 6902 operations | all applied, or none and a rejection |
/// | `merge` | RFC 7396 merge patch | merged into the whole state |
/// | `set` | `{path, value}` | replaces what is at `path`, or adds an object member (`-` appends to an array); the parent must exist |
/// | `remove` | `{path}` | removes what is at `path`, which must exist |
/// | `increment` | `{path, by?: 1}` | adds `by` to the number at `path` |
/// | `append` | `{path, value}` | appends `value` to the array at `path` |
///
/// `increment` and `append` on a path that does not exist yet, under a parent that does, start from
/// `0` and `[]`: a counter or a list needs no separate `set` first. Integer arithmetic that would
/// overflow is refused rather than silently turned into a floating-point number.
public struct JSONDocumentReducer: Reducer {
    public typealias State = JSONValue

    public static let name = "reel.json"
    /// Bump when the meaning of an action changes: old checkpoints are then rebuilt by replay.
    public static let version = "1"

    public init() {}

    /// Built once: the writer asks for it on every dispatch.
    private static let types: Set<String> = ["patch", "merge", "set", "remove", "increment", "append"]

    public var actionTypes: Set<String> { Self.types }

    /// The payload of each type as a JSON Schema, with an example; folded in this order on the
    /// initial state `{}`, every example is accepted.
    public var actionDescriptions: [ActionDescription] { Self.descriptions }

    static let descriptions: [ActionDescription] = [
        ActionDescription(
            type: "append",
            schema: JSONSchema.object(
                ["path": JSONSchema.pointer, "value": JSONSchema.any], required: ["path", "value"],
                description: "Appends value to the array at path (an absent array under an existing parent starts empty)."
            ),
            example: ["path": "/todos", "value": "Water the plants"]
        ),
        ActionDescription(
            type: "increment",
            schema: JSONSchema.object(
                ["path": JSONSchema.pointer, "by": JSONSchema.described(JSONSchema.number, "default 1")], required: ["path"],
                description: "Adds by to the number at path (an absent number under an existing parent starts at 0)."
            ),
            example: ["path": "/visits", "by": 1]
        ),
        ActionDescription(
            type: "merge",
            schema: JSONSchema.described(
                ["type": "object"], "Merges an RFC 7396 merge patch into the whole state: null removes a member."
            ),
            example: ["user": ["theme": "dark"]]
        ),
        ActionDescription(
            type: "patch",
            schema: JSONSchema.array(
                of: JSONSchema.object(
                    [
                        "op": ["enum": ["add", "remove", "replace", "move", "copy", "test"]],
                        "path": JSONSchema.pointer, "from": JSONSchema.pointer, "value": JSONSchema.any,
                    ],
                    required: ["op", "path"]
                ),
                description: "Applies RFC 6902 operations atomically: all of them, or none and the action is refused."
            ),
            example: [["op": "add", "path": "/user/name", "value": "Ada"]]
        ),
        ActionDescription(
            type: "remove",
            schema: JSONSchema.object(
                ["path": JSONSchema.pointer], required: ["path"], description: "Removes what is at path, which must exist."
            ),
            example: ["path": "/user/theme"]
        ),
        ActionDescription(
            type: "set",
            schema: JSONSchema.object(
                ["path": JSONSchema.pointer, "value": JSONSchema.any], required: ["path", "value"],
                description: "Puts value at path: replaces what is there, or adds an object member (- appends to an array); the parent must exist."
            ),
            example: ["path": "/user/name", "value": "Grace"]
        ),
    ]

    public func reduce(into state: inout JSONValue, action: ActionEnvelope) throws(ReducerError) {
        let payload = action.payload
        do {
            switch action.type {
            case "patch":
                try JSONPatch(payload).apply(to: &state)
            case "merge":
                JSONMergePatch.apply(payload, to: &state)
            case "set":
                if case .object(let members) = payload, let value = members["value"], let name = Self.rootMemberName(members["path"]),
                    Self.setRootMember(name, of: &state, to: value).applied
                {
                    return
                }
                let path = try pointer(in: payload, of: "set")
                try Self.set(try member("value", of: payload, in: "set"), at: path, in: &state)
            case "remove":
                try state.remove(at: try pointer(in: payload, of: "remove"))
            case "increment":
                try increment(&state, payload)
            case "append":
                try append(&state, payload)
            default:
                throw ReducerError(.unknownActionType, "the stock reducer does not handle '\(action.type)'")
            }
        } catch let error as JSONError {
            throw ReducerError(.rejected, "\(action.type): \(error.message)")
        } catch let error as ReducerError {
            throw error
        } catch {
            throw ReducerError(.rejected, "\(action.type): \(error)")
        }
    }

    /// `set`: replaces what is at `path`, or adds it.
    static func set(_ value: JSONValue, at path: JSONPointer, in state: inout JSONValue) throws(JSONError) {
        if isMemberToken(path.lastToken) {
            // Not an array index, so an object member (or an error either way): `add`
            // replaces or adds it in one walk down the path, where looking first took two.
            try state.add(value, at: path)
        } else if state.value(at: path) != nil {
            try state.replace(at: path, with: value)
        } else {
            try state.add(value, at: path)
        }
    }

    private func increment(_ state: inout JSONValue, _ payload: JSONValue) throws -> Void {
        let path = try pointer(in: payload, of: "increment")
        let by = payload["by"] ?? .int(1)
        guard by.doubleValue != nil else {
            throw ReducerError(.invalidPayload, "increment: 'by' must be a number, not \(by.typeName)")
        }
        try Self.increment(&state, at: path, by: by)
    }

    /// `increment` by a number `by`: adds it to the number at `path`, or puts it there.
    static func increment(_ state: inout JSONValue, at path: JSONPointer, by: JSONValue) throws(JSONError) {
        guard state.value(at: path) != nil else {
            try state.add(by, at: path)
            return
        }
        try state.modify(at: path) { (target: inout JSONValue) throws(JSONError) in
            target = try Self.incremented(target, by: by, at: path)
        }
    }

    private func append(_ state: inout JSONValue, _ payload: JSONValue) throws -> Void {
        let path = try pointer(in: payload, of: "append")
        let value = try member("value", of: payload, in: "append")
        guard state.value(at: path) != nil else {
            try state.add(.array([value]), at: path)
            return
        }
        try state.modify(at: path) { (target: inout JSONValue) throws(JSONError) in
            guard case .array(var elements) = target else {
                throw JSONError(.typeMismatch, "\(path) is \(target.typeName), not an array")
            }
            target = .null  // let `elements` be the only reference, so appending does not copy it
            elements.append(value)
            target = .array(elements)
        }
    }

    /// `set` of a member of a root object (`"/name"`, no escapes), done in place without making a
    /// JSON Pointer: what most `set`s are, and what the general walk below would do, with an array
    /// of tokens allocated at each of the two folds of every action (the writer's and the
    /// readers' copies). The name, when `path` is such a pointer.
    static func rootMemberName(_ path: JSONValue?) -> String? {
        guard case .string(let text) = path else { return nil }
        var utf8 = text.utf8[...]
        guard utf8.popFirst() == UInt8(ascii: "/"),
            !utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "~") })
        else { return nil }
        return String(Substring(utf8))
    }

    /// Sets member `name` of the root object to `value`, and gives what it replaced (`nil` for a
    /// new member); not `applied`, changing nothing, when the state is not an object.
    static func setRootMember(_ name: String, of state: inout JSONValue, to value: JSONValue) -> (applied: Bool, old: JSONValue?) {
        guard case .object(var members) = state else { return (false, nil) }
        state = .null  // `members` the only reference: the member is set without copying them
        let old = members.updateValue(value, forKey: name)
        state = .object(members)
        return (true, old)
    }

    private func member(_ name: String, of payload: JSONValue, in type: String) throws(ReducerError) -> JSONValue {
        guard case .object(let members) = payload else {
            throw ReducerError(.invalidPayload, "\(type): payload must be an object, not \(payload.typeName)")
        }
        guard let value = members[name] else {
            throw ReducerError(.invalidPayload, "\(type): payload needs '\(name)'")
        }
        return value
    }

    private func pointer(in payload: JSONValue, of type: String) throws(ReducerError) -> JSONPointer {
        guard case .string(let text) = try member("path", of: payload, in: type) else {
            throw ReducerError(.invalidPayload, "\(type): 'path' must be a string (a JSON Pointer such as \"/todos/0\")")
        }
        do {
            return try JSONPointer(text)
        } catch {
            throw ReducerError(.invalidPayload, "\(type): \(error.message)")
        }
    }
}
