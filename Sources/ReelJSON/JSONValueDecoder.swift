// JSONValue → Decodable without going through text. Coding paths are built only when an error needs
// one or a nested value gets its own decoder, so decoding a flat struct allocates no paths.

/// Converts a `JSONValue` straight to a `Decodable` type, with the results Foundation's `JSONDecoder`
/// gives under its default strategies.
///
/// Any number decodes into `Double`/`Float`; a number decodes into an integer type when its value is a
/// whole number that fits (so `3.0` decodes as `Int` 3, `3.5` does not); dictionaries keyed by `Int`
/// read their string keys as integers; a `JSONValue` inside the target type receives the value unchanged.
public struct JSONValueDecoder: Sendable {
    /// Values handed to the types being decoded as `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates a decoder.
    public init() {}

    /// Converts `value` to an instance of `type`.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - value: The JSON value to decode from.
    /// - Returns: The decoded instance.
    /// - Throws: `JSONError` with code `.conversion` and the coding path in its message, for example
    ///   `"todos[2].title: expected string, found number"`.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(JSONError) -> T {
        if T.self == JSONValue.self, let same = value as? T { return same }
        do {
            return try T(from: Impl(value: value, codingPath: [], userInfo: userInfo))
        } catch {
            throw JSONError.conversion(from: error)
        }
    }
}

extension JSONValueDecoder {
    /// The `Decoder` handed to `init(from:)`; also its own single-value container, as in Foundation.
    final class Impl: Decoder, SingleValueDecodingContainer {
        let value: JSONValue
        let codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: Any]

        init(value: JSONValue, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
            self.value = value
            self.codingPath = codingPath
            self.userInfo = userInfo
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = value else {
                throw mismatch(JSONObject.self, expected: "object", found: value, at: codingPath)
            }
            return KeyedDecodingContainer(KeyedContainer(members: members, codingPath: codingPath, userInfo: userInfo))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = value else {
                throw mismatch([JSONValue].self, expected: "array", found: value, at: codingPath)
            }
            return UnkeyedContainer(elements: elements, codingPath: codingPath, userInfo: userInfo)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { value.isNull }
        func decode(_ type: Bool.Type) throws -> Bool { try unbox(value, type, at: codingPath) }
        func decode(_ type: String.Type) throws -> String { try unbox(value, type, at: codingPath) }
        func decode(_ type: Double.Type) throws -> Double { try unbox(value, type, at: codingPath) }
        func decode(_ type: Float.Type) throws -> Float { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int.Type) throws -> Int { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int8.Type) throws -> Int8 { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int16.Type) throws -> Int16 { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int32.Type) throws -> Int32 { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int64.Type) throws -> Int64 { try unbox(value, type, at: codingPath) }
        func decode(_ type: Int128.Type) throws -> Int128 { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt.Type) throws -> UInt { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try unbox(value, type, at: codingPath) }
        func decode(_ type: UInt128.Type) throws -> UInt128 { try unbox(value, type, at: codingPath) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try unboxDecodable(value, type, at: codingPath, userInfo: userInfo)
        }
    }
}

// MARK: Unboxing

private func mismatch(_ type: Any.Type, expected: String, found value: JSONValue, at path: [any CodingKey]) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(expected), found \(value.typeName)"))
}

private func unbox(_ value: JSONValue, _ type: Bool.Type, at path: @autoclosure () -> [any CodingKey]) throws -> Bool {
    guard case .bool(let flag) = value else { throw mismatch(type, expected: "boolean", found: value, at: path()) }
    return flag
}

private func unbox(_ value: JSONValue, _ type: String.Type, at path: @autoclosure () -> [any CodingKey]) throws -> String {
    guard case .string(let string) = value else { throw mismatch(type, expected: "string", found: value, at: path()) }
    return string
}

private func unbox(_ value: JSONValue, _ type: Double.Type, at path: @autoclosure () -> [any CodingKey]) throws -> Double {
    switch value {
    case .double(let double): return double
    case .int(let integer): return Double(integer)
    default: throw mismatch(type, expected: "number", found: value, at: path())
    }
}

private func unbox(_ value: JSONValue, _ type: Float.Type, at path: @autoclosure () -> [any CodingKey]) throws -> Float {
    let double = try unbox(value, Double.self, at: path())
    // Like Foundation: precision may be lost, range may not.
    let float = Float(double)
    guard float.isFinite else {
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "number \(double) does not fit in Float"))
    }
    return float
}

private func unbox<I: FixedWidthInteger>(_ value: JSONValue, _ type: I.Type, at path: @autoclosure () -> [any CodingKey]) throws -> I {
    switch value {
    case .int(let integer):
        if let exact = I(exactly: integer) { return exact }
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "number \(integer) does not fit in \(I.self)"))
    case .double(let double):
        if let exact = I(exactly: double) { return exact }
        throw DecodingError.dataCorrupted(
            .init(codingPath: path(), debugDescription: "number \(double) is not a whole number that fits in \(I.self)"))
    default:
        throw mismatch(type, expected: "number", found: value, at: path())
    }
}

private func unboxDecodable<T: Decodable>(
    _ value: JSONValue, _ type: T.Type, at path: @autoclosure () -> [any CodingKey], userInfo: [CodingUserInfoKey: Any]
) throws -> T {
    if T.self == JSONValue.self, let same = value as? T { return same }
    return try T(from: JSONValueDecoder.Impl(value: value, codingPath: path(), userInfo: userInfo))
}

// MARK: Containers

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: JSONObject
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "missing key \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try unbox(member(key), type, at: codingPath + [key]) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try unboxDecodable(member(key), type, at: codingPath + [key], userInfo: userInfo)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: member(key), key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: member(key), key).unkeyedContainer()
    }

    // Like Foundation, a missing super member decodes from null rather than failing here.
    func superDecoder() throws -> any Decoder { decoder(for: members["super"] ?? .null, NamedCodingKey("super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder(for: members[key.stringValue] ?? .null, key) }

    private func decoder(for value: JSONValue, _ key: any CodingKey) -> JSONValueDecoder.Impl {
        JSONValueDecoder.Impl(value: value, codingPath: codingPath + [key], userInfo: userInfo)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        self.elements = elements
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    private var currentPath: [any CodingKey] { codingPath + [IndexCodingKey(currentIndex)] }

    /// The next element; the index moves on only once the caller has decoded it successfully.
    private func next(_ type: Any.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: currentPath, debugDescription: "array has only \(elements.count) elements"))
        }
        return elements[currentIndex]
    }

    /// Decodes the next element with `unboxing`, which gets the element and, lazily, its coding path.
    private mutating func take<T>(_ type: T.Type, _ unboxing: (JSONValue, () -> [any CodingKey]) throws -> T) throws -> T {
        let element = try next(type)
        let path = codingPath
        let index = currentIndex
        let value = try unboxing(element) { path + [IndexCodingKey(index)] }
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Any?.self).isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: String.Type) throws -> String { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try take(type) { try unbox($0, type, at: $1()) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let userInfo = userInfo  // a copy: `take` holds `self` for its whole call
        return try take(type) { try unboxDecodable($0, type, at: $1(), userInfo: userInfo) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let userInfo = userInfo
        return try take(KeyedDecodingContainer<NestedKey>.self) { value, path in
            try JSONValueDecoder.Impl(value: value, codingPath: path(), userInfo: userInfo).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let userInfo = userInfo
        return try take((any UnkeyedDecodingContainer).self) { value, path in
            try JSONValueDecoder.Impl(value: value, codingPath: path(), userInfo: userInfo).unkeyedContainer()
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        let userInfo = userInfo
        return try take((any Decoder).self) { value, path in
            JSONValueDecoder.Impl(value: value, codingPath: path(), userInfo: userInfo)
        }
    }
}
