/// A JSON document: the state of the stock reducer, every action payload, and every value on the wire.
///
/// Objects are unordered (``JSONObject``); every serialization of an object writes its members
/// in sorted key order, so a value encodes to the same bytes however its objects were built. That is
/// what makes checkpoint hashes and "replay gives byte-for-byte the same state" meaningful: a replay
/// builds the same values, so the same bytes. (Values that are merely `==` may still differ in bytes:
/// `1` and `1.0`, `0.0` and `-0.0`, or keys that are canonically equivalent Unicode spelled
/// differently.)
///
/// Numbers keep integers exact: a number written without fraction or exponent that fits `Int64` is
/// `.int`, every other number is `.double`. Comparison treats `.int(1)` and `.double(1.0)` as equal,
/// as RFC 6902's `test` operation requires.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

extension JSONValue: Equatable {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)):
            return Double(exactly: a) == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        default: return false
        }
    }
}

extension JSONValue {
    /// The name of this value's JSON type, for error messages: `"object"`, `"array"`, `"string"`,
    /// `"number"`, `"boolean"` or `"null"`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    public var isNull: Bool { if case .null = self { true } else { false } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }

    /// The value as an integer, when it is a number with no fractional part that fits `Int64`.
    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d): Int64(exactly: d)
        default: nil
        }
    }

    /// The value as a `Double`, when it is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The member `key` of an object; `nil` for a missing member or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { o[key] } else { nil }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members = JSONObject(minimumCapacity: elements.count)
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}

