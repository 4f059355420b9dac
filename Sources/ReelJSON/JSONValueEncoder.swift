// Encodable → JSONValue without going through text. Containers handed out by an Encoder keep being
// written to after they are returned (and `superEncoder()` results are filled in later still), so the
// encoder builds a small tree of reference boxes and turns it into a JSONValue once at the end —
// the same design as Foundation's JSONEncoder.

/// Converts `Encodable` values straight to `JSONValue`, with the results Foundation's `JSONEncoder`
/// gives under its default strategies.
///
/// `nil` encodes as `null` (and `encodeIfPresent` omits the key); dictionaries keyed by `Int` get string
/// keys; a `JSONValue` inside the value is passed through unchanged. An unsigned integer above
/// `Int64.max` and a non-finite floating-point number cannot be represented and throw.
/// Foundation types are not special-cased: without Foundation, `Date`, `Data` and `URL` use their
/// own `Encodable` conformances.
public struct JSONValueEncoder: Sendable {
    /// Values handed to the types being encoded as `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates an encoder.
    public init() {}

    /// Converts `value` to a JSON value.
    /// - Parameter value: The value to encode.
    /// - Returns: The JSON value.
    /// - Throws: `JSONError` with code `.conversion` and the coding path in its message (for example
    ///   `"items[3].count: 18446744073709551615 does not fit in a JSON integer (Int64)"`), or when the value
    ///   encodes nothing at all.
    public func encode<T: Encodable>(_ value: T) throws(JSONError) -> JSONValue {
        if let json = value as? JSONValue { return json }
        do {
            let encoder = Impl(codingPath: [], userInfo: userInfo)
            try value.encode(to: encoder)
            guard let slot = encoder.slot else {
                throw JSONError(.conversion, "\(T.self) did not encode any value")
            }
            return slot.resolved
        } catch {
            throw JSONError.conversion(from: error)
        }
    }
}

/// A place in the tree being built: a finished value, or a container still being filled.
enum EncodedSlot {
    case value(JSONValue)
    case array(EncodedArray)
    case object(EncodedObject)
    /// A `superEncoder()`: its content is whatever was encoded into it by the time the tree is resolved.
    case encoder(JSONValueEncoder.Impl)

    var resolved: JSONValue {
        switch self {
        case .value(let value): value
        case .array(let array): .array(array.elements.map(\.resolved))
        case .object(let object): .object(JSONObject(object.members.mapValues(\.resolved)))
        // Foundation writes an empty object for a value that encoded nothing.
        case .encoder(let encoder): encoder.slot?.resolved ?? .object([:])
        }
    }
}

final class EncodedArray {
    var elements: [EncodedSlot] = []
}

final class EncodedObject {
    var members: [String: EncodedSlot] = [:]
}

extension JSONValueEncoder {
    /// The `Encoder` handed to `encode(to:)`; also its own single-value container, as in Foundation.
    final class Impl: Encoder, SingleValueEncodingContainer {
        let codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: Any]
        private(set) var slot: EncodedSlot?

        init(codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
            self.codingPath = codingPath
            self.userInfo = userInfo
        }

        func storeValue(_ value: JSONValue) {
            assert(slot == nil, "\(describeCodingPath(codingPath)): a value was already encoded here")
            slot = .value(value)
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let object: EncodedObject
            switch slot {
            case .object(let existing)?: object = existing  // e.g. a subclass and its superclass share it
            case nil:
                object = EncodedObject()
                slot = .object(object)
            default:
                preconditionFailure("\(describeCodingPath(codingPath)): keyed container requested after encoding another kind of value")
            }
            return KeyedEncodingContainer(KeyedContainer(object: object, codingPath: codingPath, userInfo: userInfo))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let array: EncodedArray
            switch slot {
            case .array(let existing)?: array = existing
            case nil:
                array = EncodedArray()
                slot = .array(array)
            default:
                preconditionFailure("\(describeCodingPath(codingPath)): unkeyed container requested after encoding another kind of value")
            }
            return UnkeyedContainer(array: array, codingPath: codingPath, userInfo: userInfo)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { self }

        func encodeNil() throws { storeValue(.null) }
        func encode(_ value: Bool) throws { storeValue(.bool(value)) }
        func encode(_ value: String) throws { storeValue(.string(value)) }
        func encode(_ value: Double) throws { storeValue(try box(value, at: codingPath)) }
        func encode(_ value: Float) throws { storeValue(try box(value, at: codingPath)) }
        func encode(_ value: Int) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: Int8) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: Int16) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: Int32) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: Int64) throws { storeValue(.int(value)) }
        func encode(_ value: Int128) throws { storeValue(try box(value, at: codingPath)) }
        func encode(_ value: UInt) throws { storeValue(try box(value, at: codingPath)) }
        func encode(_ value: UInt8) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: UInt16) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: UInt32) throws { storeValue(.int(Int64(value))) }
        func encode(_ value: UInt64) throws { storeValue(try box(value, at: codingPath)) }
        func encode(_ value: UInt128) throws { storeValue(try box(value, at: codingPath)) }
        func encode<T: Encodable>(_ value: T) throws {
            switch try boxEncodable(value, at: codingPath, userInfo: userInfo) {
            case .value(let json): storeValue(json)
            case let other: slot = other
            }
        }
    }
}

// MARK: Boxing

/// Integers go in `.int`; one that does not fit `Int64` has no exact JSON form here and is an error.
private func box(_ value: some BinaryInteger, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
    guard let integer = Int64(exactly: value) else {
        throw EncodingError.invalidValue(
            value, .init(codingPath: path(), debugDescription: "\(value) does not fit in a JSON integer (Int64)"))
    }
    return .int(integer)
}

private func box(_ value: Double, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
    guard value.isFinite else {
        throw EncodingError.invalidValue(
            value, .init(codingPath: path(), debugDescription: "\(value) cannot be represented in JSON"))
    }
    return .double(value)
}

private func box(_ value: Float, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
    guard value.isFinite else {
        throw EncodingError.invalidValue(
            value, .init(codingPath: path(), debugDescription: "\(value) cannot be represented in JSON"))
    }
    // Foundation writes a Float's shortest text ("0.1"), which reads back as the Double 0.1, not as
    // Double(Float(0.1)) = 0.10000000149011612. Going through the same text gives the same Double.
    return .double(Double(value.description) ?? Double(value))
}

/// Encodes a nested value with its own encoder, or passes a `JSONValue` through unchanged.
private func boxEncodable<T: Encodable>(
    _ value: T, at path: @autoclosure () -> [any CodingKey], userInfo: [CodingUserInfoKey: Any]
) throws -> EncodedSlot {
    if T.self == JSONValue.self, let json = value as? JSONValue { return .value(json) }
    let encoder = JSONValueEncoder.Impl(codingPath: path(), userInfo: userInfo)
    try value.encode(to: encoder)
    return encoder.slot ?? .value(.object([:]))
}

// MARK: Containers

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: EncodedObject
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    private func set(_ value: JSONValue, _ key: Key) { object.members[key.stringValue] = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { set(try box(value, at: codingPath + [key]), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.members[key.stringValue] = try boxEncodable(value, at: codingPath + [key], userInfo: userInfo)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested: EncodedObject
        if case .object(let existing)? = object.members[key.stringValue] {
            nested = existing
        } else {
            nested = EncodedObject()
            object.members[key.stringValue] = .object(nested)
        }
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(object: nested, codingPath: codingPath + [key], userInfo: userInfo))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: EncodedArray
        if case .array(let existing)? = object.members[key.stringValue] {
            nested = existing
        } else {
            nested = EncodedArray()
            object.members[key.stringValue] = .array(nested)
        }
        return UnkeyedContainer(array: nested, codingPath: codingPath + [key], userInfo: userInfo)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: NamedCodingKey("super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let encoder = JSONValueEncoder.Impl(codingPath: codingPath + [key], userInfo: userInfo)
        object.members[key.stringValue] = .encoder(encoder)
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let array: EncodedArray
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    var count: Int { array.elements.count }

    private var nextPath: [any CodingKey] { codingPath + [IndexCodingKey(count)] }
    private func append(_ value: JSONValue) { array.elements.append(.value(value)) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try box(value, at: nextPath)) }
    mutating func encode(_ value: Float) throws { append(try box(value, at: nextPath)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: Int128) throws { append(try box(value, at: nextPath)) }
    mutating func encode(_ value: UInt) throws { append(try box(value, at: nextPath)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(try box(value, at: nextPath)) }
    mutating func encode(_ value: UInt128) throws { append(try box(value, at: nextPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try boxEncodable(value, at: nextPath, userInfo: userInfo))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = EncodedObject()
        let path = nextPath
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(object: nested, codingPath: path, userInfo: userInfo))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = EncodedArray()
        let path = nextPath
        array.elements.append(.array(nested))
        return UnkeyedContainer(array: nested, codingPath: path, userInfo: userInfo)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = JSONValueEncoder.Impl(codingPath: nextPath, userInfo: userInfo)
        array.elements.append(.encoder(encoder))
        return encoder
    }
}
