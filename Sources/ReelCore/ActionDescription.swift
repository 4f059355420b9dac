import ReelJSON

/// What one action type accepts: its payload's shape as a JSON Schema, and an example payload.
///
/// Reducers declare them (``Reducer/actionDescriptions``); the store's `describe` method lists
/// them, `reel dispatch --help` and `reel describe` print them, and the time-travel page's
/// dispatch form offers them.
public struct ActionDescription: Sendable, Equatable {
    /// The action type.
    public var type: String
    /// The version of the payload's shape that the reducers read: 1 until the shape changes.
    public var version: Int
    /// A JSON Schema (draft 2020-12) of the payload; its `description` says what the action does.
    public var schema: JSONValue
    /// A payload the reducer accepts (for the stock reducer, on an empty state made ready by the
    /// examples before it).
    public var example: JSONValue
    /// How payloads of older versions become ``version``'s, one version at a time; sorted by
    /// ``Upcaster/from``.
    public var upcasters: [Upcaster]

    public init(type: String, version: Int = 1, schema: JSONValue, example: JSONValue, upcasters: [Upcaster] = []) {
        self.type = type
        self.version = version
        self.schema = schema
        self.example = example
        self.upcasters = upcasters.sorted { $0.from < $1.from }
    }

    /// The versions whose payloads can be read: ``version`` and every older one from which an
    /// unbroken chain of upcasters leads to it; ascending.
    public var readableVersions: [Int] {
        var readable = [version]
        let sources = Set(upcasters.map(\.from))
        while let oldest = readable.first, oldest > 1, sources.contains(oldest - 1) { readable.insert(oldest - 1, at: 0) }
        return readable
    }

    /// Equal when they describe the same: upcasters compare by the version they read.
    public static func == (lhs: ActionDescription, rhs: ActionDescription) -> Bool {
        lhs.type == rhs.type && lhs.version == rhs.version && lhs.schema == rhs.schema && lhs.example == rhs.example
            && lhs.upcasters.map(\.from) == rhs.upcasters.map(\.from)
    }

    /// What the schema says the action does, if it says.
    public var summary: String? {
        if case .string(let text)? = schema["description"] { return text }
        return nil
    }

    /// A type no reducer described: any payload, no example.
    public static func undescribed(_ type: String) -> ActionDescription {
        ActionDescription(type: type, schema: JSONSchema.any, example: .null)
    }
}

/// Small builders for the JSON Schemas of payloads.
///
/// ```swift
/// static let payloadSchema = JSONSchema.object(
///     ["title": JSONSchema.string], required: ["title"], description: "Adds a todo."
/// )
/// ```
public enum JSONSchema {
    /// Any JSON value.
    public static let any: JSONValue = [:]
    public static let string: JSONValue = ["type": "string"]
    public static let integer: JSONValue = ["type": "integer"]
    public static let number: JSONValue = ["type": "number"]
    public static let boolean: JSONValue = ["type": "boolean"]
    /// A JSON Pointer (RFC 6901) into the state.
    public static let pointer: JSONValue = [
        "type": "string", "format": "json-pointer", "description": "a JSON Pointer into the state, such as /todos/0",
    ]

    /// An array whose elements all fit `items`.
    public static func array(of items: JSONValue, description: String? = nil) -> JSONValue {
        described(["type": "array", "items": items], description)
    }

    /// An object with these members, of which `required` must be there.
    public static func object(_ properties: JSONObject, required: [String] = [], description: String? = nil) -> JSONValue {
        var schema: JSONObject = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { schema["required"] = .array(required.map(JSONValue.string)) }
        return described(.object(schema), description)
    }

    /// `schema` with a `description`.
    public static func described(_ schema: JSONValue, _ description: String?) -> JSONValue {
        guard let description, case .object(var members) = schema else { return schema }
        members["description"] = .string(description)
        return .object(members)
    }
}

extension Reducer {
    /// Every type undescribed: reducers that know their payloads override this.
    public var actionDescriptions: [ActionDescription] {
        actionTypes.sorted().map(ActionDescription.undescribed)
    }
}

extension ActionPayload {
    /// Any object, undescribed: declare it beside the payload type to tell users its shape.
    public static var payloadSchema: JSONValue {
        JSONSchema.described(["type": "object"], "no schema declared: \(Self.self) declares none")
    }

    /// No example unless the payload type declares one.
    public static var example: Self? { nil }

    /// Version 1 until the payload type declares another.
    public static var version: Int { 1 }

    /// None until the payload type declares some.
    public static var upcasters: [Upcaster] { [] }

    /// The action type's description, from ``payloadSchema``, ``example``, ``version`` and
    /// ``upcasters``.
    public static var actionDescription: ActionDescription {
        let example = Self.example.flatMap { try? JSONValueEncoder().encode($0) } ?? .null
        return ActionDescription(type: actionType, version: version, schema: payloadSchema, example: example, upcasters: upcasters)
    }
}

extension StoreAction {
    /// The store's own actions, which every store accepts.
    public static let descriptions: [ActionDescription] = [
        ActionDescription(
            type: revertType,
            schema: JSONSchema.object(
                ["to": JSONSchema.integer], required: ["to"],
                description: "Makes the state equal to the state at seq `to`, by appending this action (the log stays as it was)."
            ),
            example: ["to": 1]
        )
    ]
}
