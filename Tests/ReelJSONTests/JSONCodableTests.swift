import Foundation  // only to compare the bridge with Foundation's coders; ReelJSON itself does not use it
import PropertyBased
import Testing

@testable import ReelJSON

private struct Todo: Codable, Equatable {
    var id: Int
    var title: String
    var done: Bool
    var note: String?
    var tags: [String]
}

private struct User: Codable, Equatable {
    var name: String
    var age: UInt8
    var score: Double
}

private struct TodoList: Codable, Equatable {
    var owner: User
    var todos: [Todo]
    var counts: [String: Int]
    var byID: [Int: String]
    var flags: [Bool?]
    var nested: [[Int]]
}

private enum Action: Codable, Equatable {
    case add(title: String)
    case remove(id: Int)
    case rename(Int, to: String)
    case clear
    case batch([Action])
}

/// Carries raw JSON inside a typed envelope, as Reel's actions do.
private struct Envelope: Codable, Equatable {
    var kind: String
    var payload: JSONValue
    var extra: JSONValue?
}

/// Uses every kind of container by hand, including nested and super encoders.
private struct Handmade: Codable, Equatable {
    var values: [Int]
    var pair: (String, Bool)
    var inner: [String: String]

    enum Keys: String, CodingKey { case values, pair, inner, meta }
    enum InnerKeys: String, CodingKey { case value }

    init(values: [Int], pair: (String, Bool), inner: [String: String]) {
        self.values = values
        self.pair = pair
        self.inner = inner
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        var values = try container.nestedUnkeyedContainer(forKey: .values)
        self.values = []
        while !values.isAtEnd {
            var element = try values.nestedContainer(keyedBy: InnerKeys.self)
            self.values.append(try element.decode(Int.self, forKey: .value))
            element = try values.superDecoder().container(keyedBy: InnerKeys.self)
            #expect(try element.decode(Int.self, forKey: .value) == self.values.last)
        }
        var pair = try container.nestedUnkeyedContainer(forKey: .pair)
        self.pair = (try pair.decode(String.self), try pair.decode(Bool.self))
        #expect(pair.isAtEnd)
        inner = try [String: String](from: container.superDecoder(forKey: .inner))
        let meta = try container.nestedContainer(keyedBy: InnerKeys.self, forKey: .meta)
        #expect(try meta.decode(Int.self, forKey: .value) == self.values.count)
        #expect(try container.superDecoder().singleValueContainer().decode(String.self) == "base")
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var values = container.nestedUnkeyedContainer(forKey: .values)
        for value in self.values {
            var element = values.nestedContainer(keyedBy: InnerKeys.self)
            try element.encode(value, forKey: .value)
            var again = values.superEncoder().container(keyedBy: InnerKeys.self)
            try again.encode(value, forKey: .value)
        }
        var pair = container.nestedUnkeyedContainer(forKey: .pair)
        try pair.encode(self.pair.0)
        try pair.encode(self.pair.1)
        try inner.encode(to: container.superEncoder(forKey: .inner))
        var meta = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .meta)
        try meta.encode(self.values.count, forKey: .value)
        var base = container.superEncoder().singleValueContainer()
        try base.encode("base")
    }

    static func == (a: Handmade, b: Handmade) -> Bool {
        a.values == b.values && a.pair == b.pair && a.inner == b.inner
    }
}

private class Animal: Codable {
    var legs: Int
    init(legs: Int) { self.legs = legs }
}

private final class Dog: Animal {
    var name: String
    enum Keys: String, CodingKey { case name }

    init(name: String, legs: Int) {
        self.name = name
        super.init(legs: legs)
    }

    required init(from decoder: any Decoder) throws {
        name = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .name)
        try super.init(from: decoder.container(keyedBy: Keys.self).superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .name)
        try super.encode(to: container.superEncoder())
    }
}

private let sample = TodoList(
    owner: User(name: "ada", age: 36, score: 9.5),
    todos: [
        Todo(id: 1, title: "write parser", done: true, note: nil, tags: ["json"]),
        Todo(id: 2, title: "write docs", done: false, note: "soon", tags: []),
    ],
    counts: ["open": 1, "closed": 1],
    byID: [1: "write parser", 2: "write docs"],
    flags: [true, nil, false],
    nested: [[1, 2], [], [3]]
)

private func encode<T: Encodable>(_ value: T) throws(JSONError) -> JSONValue {
    try JSONValueEncoder().encode(value)
}

private func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue) throws(JSONError) -> T {
    try JSONValueDecoder().decode(type, from: value)
}

private func conversionError(_ body: () throws -> Void) -> JSONError? {
    do {
        try body()
        Issue.record("expected a conversion error")
        return nil
    } catch let error as JSONError {
        #expect(error.code == .conversion)
        return error
    } catch {
        Issue.record("expected a JSONError, got \(error)")
        return nil
    }
}

@Suite struct JSONCodableTests {
    @Test func nestedStructsArraysDictionariesAndOptionals() throws {
        let encoded = try encode(sample)
        let expected = try JSONValue(parsing: """
            {"owner": {"name": "ada", "age": 36, "score": 9.5},
             "todos": [{"id": 1, "title": "write parser", "done": true, "tags": ["json"]},
                       {"id": 2, "title": "write docs", "done": false, "note": "soon", "tags": []}],
             "counts": {"open": 1, "closed": 1},
             "byID": {"1": "write parser", "2": "write docs"},
             "flags": [true, null, false],
             "nested": [[1, 2], [], [3]]}
            """)
        #expect(JSONFixtures.identical(encoded, expected), "\(encoded)")
        #expect(try decode(TodoList.self, encoded) == sample)
    }

    @Test func matchesFoundationJSONEncoderAndDecoder() throws {
        let foundationEncoder = JSONEncoder()
        foundationEncoder.outputFormatting = .sortedKeys
        let viaText = try JSONValue(parsing: Array(try foundationEncoder.encode(sample)))
        #expect(try encode(sample) == viaText)

        let text = Data(try encode(sample).serialized())
        #expect(try JSONDecoder().decode(TodoList.self, from: text) == sample)

        let actions: [Action] = [.add(title: "x"), .remove(id: 3), .rename(4, to: "y"), .clear, .batch([.clear])]
        let actionsViaText = try JSONValue(parsing: Array(try foundationEncoder.encode(actions)))
        #expect(try encode(actions) == actionsViaText)
    }

    @Test func enumsWithAssociatedValues() throws {
        let actions: [Action] = [.add(title: "milk"), .remove(id: 7), .rename(2, to: "eggs"), .clear, .batch([.remove(id: 1)])]
        let encoded = try encode(actions)
        let expected = try JSONValue(parsing: """
            [{"add": {"title": "milk"}}, {"remove": {"id": 7}}, {"rename": {"_0": 2, "to": "eggs"}},
             {"clear": {}}, {"batch": {"_0": [{"remove": {"id": 1}}]}}]
            """)
        #expect(JSONFixtures.identical(encoded, expected), "\(encoded)")
        #expect(try decode([Action].self, encoded) == actions)
    }

    @Test func explicitNullAndMissingKeyBothDecodeAsNil() throws {
        #expect(try decode(Todo.self, ["id": 1, "title": "t", "done": false, "tags": []]).note == nil)
        #expect(try decode(Todo.self, ["id": 1, "title": "t", "done": false, "tags": [], "note": nil]).note == nil)
        #expect(try encode([1, nil, 3] as [Int?]) == [1, nil, 3])
        #expect(try decode([Int?].self, [1, nil, 3]) == [1, nil, 3])
        #expect(try encode(Int?.none) == .null)
    }

    @Test func jsonValuesPassThroughUnchanged() async throws {
        let payload: JSONValue = ["n": .double(1), "i": .int(1), "z": .double(-0.0), "deep": [["x": nil]]]
        let envelope = Envelope(kind: "patch", payload: payload, extra: .string("e"))
        let encoded = try encode(envelope)
        #expect(JSONFixtures.identical(encoded, ["kind": "patch", "payload": payload, "extra": "e"]))
        let decoded = try decode(Envelope.self, encoded)
        #expect(JSONFixtures.identical(decoded.payload, payload))

        await propertyCheck(count: 200, input: JSONFixtures.value) { value in
            #expect(JSONFixtures.identical(try encode(value), value))
            #expect(JSONFixtures.identical(try decode(JSONValue.self, value), value))
            let wrapped = try encode(Envelope(kind: "k", payload: value, extra: nil))
            #expect(JSONFixtures.identical(wrapped, ["kind": "k", "payload": value]))
            #expect(JSONFixtures.identical(try decode(Envelope.self, wrapped).payload, value))
        }
    }

    /// JSONValue's own Codable conformance, through a coder that is not the bridge.
    ///
    /// Foundation's decoder hands out a number such as `7.151301681968075e+18` as the Int64
    /// 7151301681968075000 (exact in decimal, not what the double means), and a `Decoder` does not
    /// tell integer literals from others; so integral doubles beyond 2^53 cannot round-trip through
    /// it and are left out of this property (the bridge and the parser keep them exactly).
    @Test func jsonValueThroughFoundationCoders() async throws {
        await propertyCheck(count: 200, input: JSONFixtures.value.filter { !Self.hasLargeIntegralDouble($0) }) { value in
            let data = try JSONEncoder().encode(value)
            #expect(try JSONValue(parsing: Array(data)) == value)
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(value.serialized())) == value)
        }
    }

    static func hasLargeIntegralDouble(_ value: JSONValue) -> Bool {
        switch value {
        case .double(let d): d.rounded() == d && abs(d) >= 9_007_199_254_740_992
        case .array(let elements): elements.contains(where: hasLargeIntegralDouble)
        case .object(let members): members.values.contains(where: hasLargeIntegralDouble)
        default: false
        }
    }

    @Test func handWrittenContainersAndSuperEncoders() throws {
        let value = Handmade(values: [3, 4], pair: ("p", true), inner: ["a": "b"])
        let encoded = try encode(value)
        let expected = try JSONValue(parsing: """
            {"values": [{"value": 3}, {"value": 3}, {"value": 4}, {"value": 4}], "pair": ["p", true],
             "inner": {"a": "b"}, "meta": {"value": 2}, "super": "base"}
            """)
        #expect(JSONFixtures.identical(encoded, expected), "\(encoded)")
        #expect(try decode(Handmade.self, encoded) == value)

        let dog = try encode(Dog(name: "rex", legs: 4))
        #expect(dog == ["name": "rex", "super": ["legs": 4]])
        let decodedDog = try decode(Dog.self, dog)
        #expect(decodedDog.name == "rex" && decodedDog.legs == 4)
    }

    @Test func numbersConvertOnlyWhenExact() throws {
        #expect(try decode(Int.self, .double(3)) == 3)
        #expect(try decode(UInt8.self, .double(255)) == 255)
        #expect(try decode(Double.self, .int(3)) == 3)
        #expect(try decode(Float.self, .double(0.1)) == Float(0.1))
        #expect(try encode(Float(0.1)) == .double(0.1))  // like Foundation: via the Float's shortest text
        #expect(try encode(UInt64(Int64.max)) == .int(.max))
        #expect(try encode(Int8.min) == .int(-128))
        #expect(try decode(UInt64.self, .double(1e19)) == 10_000_000_000_000_000_000)
        #expect(try decode(Int128.self, .int(.min)) == Int128(Int64.min))

        #expect(conversionError { _ = try decode(Int.self, .double(3.5)) }?.message == "number 3.5 is not a whole number that fits in Int")
        #expect(conversionError { _ = try decode(Int8.self, .int(300)) }?.message == "number 300 does not fit in Int8")
        #expect(conversionError { _ = try decode(UInt.self, .int(-1)) }?.message == "number -1 does not fit in UInt")
        #expect(conversionError { _ = try decode(Float.self, .double(1e300)) } != nil)
        #expect(conversionError { _ = try decode(Int.self, "3") }?.message == "expected number, found string")
        #expect(conversionError { _ = try decode(Bool.self, .int(1)) }?.message == "expected boolean, found number")
    }

    @Test func unrepresentableValuesAreConversionErrors() throws {
        struct Big: Encodable { var big: UInt64 }
        #expect(conversionError { _ = try encode(Big(big: .max)) }?.message
            == "big: 18446744073709551615 does not fit in a JSON integer (Int64)")
        #expect(conversionError { _ = try encode([1.0, .nan]) }?.message == "[1]: nan cannot be represented in JSON")
        #expect(conversionError { _ = try encode(Float.infinity) } != nil)
        #expect(conversionError { _ = try encode(UInt128.max) } != nil)

        struct Silent: Encodable { func encode(to encoder: any Encoder) throws {} }
        #expect(conversionError { _ = try encode(Silent()) }?.message == "Silent did not encode any value")
        #expect(try encode(["s": Silent()]) == ["s": [:]])  // nested, like Foundation: an empty object
        struct Empty: Codable, Equatable {}
        #expect(try encode(Empty()) == [:])
        #expect(try decode(Empty.self, [:]) == Empty())
    }

    @Test func errorsNameTheCodingPath() throws {
        var document = try encode(sample)
        guard case .object(var members) = document, case .array(var todos)? = members["todos"] else {
            Issue.record("unexpected shape \(document)")
            return
        }
        todos.append(["id": 3, "title": 42, "done": false, "tags": []])
        members["todos"] = .array(todos)
        document = .object(members)
        #expect(conversionError { _ = try decode(TodoList.self, document) }?.message
            == "todos[2].title: expected string, found number")

        todos[2] = ["id": 3, "done": false, "tags": []]
        members["todos"] = .array(todos)
        #expect(conversionError { _ = try decode(TodoList.self, .object(members)) }?.message
            == "todos[2]: missing key \"title\"")

        todos[2] = ["id": 3, "title": "x", "done": false, "tags": ["a", nil]]
        members["todos"] = .array(todos)
        #expect(conversionError { _ = try decode(TodoList.self, .object(members)) }?.message
            == "todos[2].tags[1]: expected string, found null")

        #expect(conversionError { _ = try decode(TodoList.self, []) }?.message == "expected object, found array")
        #expect(conversionError { _ = try decode([Int].self, ["a": 1]) }?.message == "expected array, found object")
        #expect(conversionError { _ = try decode([Int: String].self, ["x": "y"]) } != nil)

        struct Pair: Decodable {
            var a: Int, b: Int
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                a = try container.decode(Int.self)
                b = try container.decode(Int.self)
            }
        }
        #expect(conversionError { _ = try decode([Pair].self, [[1, 2], [3]]) }?.message
            == "[1][1]: array has only 1 elements")
    }

    @Test func errorsThrownByTheTypesThemselvesKeepTheirMessage() throws {
        struct Even: Decodable {
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                guard try container.decode(Int.self) % 2 == 0 else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be even")
                }
            }
        }
        struct Holder: Decodable { var value: Even }
        #expect(conversionError { _ = try decode(Holder.self, ["value": 3]) }?.message == "value: must be even")
    }

    @Test func userInfoReachesTheTypes() throws {
        let key = try #require(CodingUserInfoKey(rawValue: "reel.test"))
        struct Probe: Codable {
            init() {}
            init(from decoder: any Decoder) throws {
                #expect(decoder.userInfo[CodingUserInfoKey(rawValue: "reel.test")!] as? String == "in")
            }
            func encode(to encoder: any Encoder) throws {
                #expect(encoder.userInfo[CodingUserInfoKey(rawValue: "reel.test")!] as? String == "out")
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            }
        }
        var encoder = JSONValueEncoder()
        encoder.userInfo[key] = "out"
        #expect(try encoder.encode([Probe()]) == [nil])
        var decoder = JSONValueDecoder()
        decoder.userInfo[key] = "in"
        _ = try decoder.decode([Probe].self, from: [nil])
    }
}
