import ReelJSON
import Testing

/// JSON text written straight as the binary encoding (``JSONShapeReader/readBinaryValue(into:)``)
/// comes out byte for byte as the parsed value's encoding (``JSONValue/binaryEncoded()``), for
/// every document it takes; and it takes the plain ones.
struct JSONBinaryTranscodingTests {
    /// SplitMix64: the same documents for the same seed.
    typealias Random = JSONChangeRecorderTests.Random

    /// The transcoding of the whole of `text`, or `nil` when it leaves it to the ordinary way.
    static func transcoded(_ text: String, maxDepth: Int = 512) -> [UInt8]? {
        Array(text.utf8).withUnsafeBytes { bytes in
            JSONShapeReader.read(bytes, maxDepth: maxDepth) { reader -> [UInt8]? in
                // Appended after what the buffer holds, which stays as it was.
                var encoded: [UInt8] = [0xAA]
                guard reader.readBinaryValue(into: &encoded), reader.isAtEnd(), encoded.first == 0xAA else { return nil }
                return Array(encoded.dropFirst())
            }
        }
    }

    static func expected(_ text: String, maxDepth: Int = 512) throws -> [UInt8] {
        try JSONValue(parsing: text, maxDepth: maxDepth).binaryEncoded()
    }

    static let longArray: String = "[" + (0..<200).map { String($0) }.joined(separator: ",") + "]"
    static let longObject: String = "{" + (0..<150).reversed().map { "\"k\($0)\":[\($0)]" }.joined(separator: ",") + "}"
    static let nestedCounts: String = {
        let inner: String = "[" + Array(repeating: "0", count: 130).joined(separator: ",") + "]"
        return "[" + Array(repeating: inner, count: 3).joined(separator: ",") + "]"
    }()
    static let longString: String = "\"" + String(repeating: "x", count: 300) + "\""

    @Test(arguments: [
        "null", "true", "false", "0", "-1", "7", "9223372036854775807", "-9223372036854775808",
        #""""#, "\"plain text ~ and a delete: \u{7F}\"",
        "[]", "{}", " [ 1 , [ ] , { } ] ",
        #"[{"op":"add","path":"/k1","value":1}]"#,
        // Keys out of canonical order, and nested objects out of order inside.
        #"{"value":1,"path":"/a","op":"replace"}"#,
        #"{"b":{"z":1,"a":[{"y":true,"x":null}]},"a":"first","ab":2,"":0}"#,
        // Longer strings, arrays and objects: lengths and counts of two varint bytes.
        longString, longArray, longObject, nestedCounts,
    ])
    func writesPlainValuesAsTheirParsedEncoding(text: String) throws {
        let encoded = try #require(Self.transcoded(text))
        #expect(encoded == (try Self.expected(text)))
    }

    @Test(arguments: [
        // Values the ordinary way reads: numbers beyond plain integers, escapes, text beyond ASCII.
        "-0", "1.5", "1e3", "2E-2", "9223372036854775808", "-9223372036854775809",
        #""caf\u00e9""#, #""a\nb""#, "\"café\"", #"{"k\u0065y":1}"#, #"{"é":1}"#,
        // A repeated key (the last one wins, the ordinary way).
        #"{"a":1,"b":2,"a":3}"#, #"{"b":1,"a":2,"b":3}"#,
        // What the ordinary way refuses, with its reason.
        "01", "-", "[1,]", "{\"a\"}", "{\"a\":1,}", "tru", "nul", "[1 2]", "\"open", "",
    ])
    func leavesTheRestToTheOrdinaryWay(text: String) {
        #expect(Self.transcoded(text) == nil)
    }

    @Test func nestsAsDeepAsTheParserAllowsAndNoDeeper() throws {
        let deep = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        #expect(Self.transcoded(deep, maxDepth: 10) == (try Self.expected(deep, maxDepth: 10)))
        #expect(Self.transcoded(deep, maxDepth: 9) == nil)
        #expect((try? JSONValue(parsing: deep, maxDepth: 9)) == nil)
    }

    @Test func leavesTheCursorWhereItWasWhenItDeclines() throws {
        let text = #"{"a":[1,2.5],"b":3}"#
        let read = Array(text.utf8).withUnsafeBytes { bytes in
            JSONShapeReader.read(bytes) { reader -> (JSONValue?, [UInt8]?)? in
                var a: JSONValue?
                var b: [UInt8]?
                let object = reader.readObject { reader, key in
                    if JSONShapeReader.key(key, is: "a") {
                        var declined: [UInt8] = [1, 2]
                        guard !reader.readBinaryValue(into: &declined), declined == [1, 2] else { return false }
                        a = reader.readValue()
                    } else {
                        var encoded: [UInt8] = []
                        b = reader.readBinaryValue(into: &encoded) ? encoded : nil
                    }
                    return true
                }
                return object && reader.isAtEnd() ? (a, b) : nil
            }
        }
        let (a, b) = try #require(read)
        #expect(a == [1, 2.5])
        #expect(b == JSONValue.int(3).binaryEncoded())
    }

    /// Random documents, plain and not, in any key order and spacing: whatever is taken is the
    /// parsed value's encoding, and most plain ones are taken.
    @Test func agreesWithTheOrdinaryWayOnRandomDocuments() throws {
        var generator = Random(state: 31)
        var taken = 0
        for _ in 0..<3_000 {
            let text = Self.randomDocument(depth: 0, using: &generator)
            guard let expected = try? Self.expected(text) else {
                #expect(Self.transcoded(text) == nil, "\(text)")
                continue
            }
            if let encoded = Self.transcoded(text) {
                taken += 1
                #expect(encoded == expected, "\(text)")
            }
        }
        #expect(taken > 1_000)
    }

    static func randomDocument(depth: Int, using generator: inout Random) -> String {
        let space = [" ", "", "", "\n"][Int.random(in: 0..<4, using: &generator)]
        switch Int.random(in: 0..<(depth > 3 ? 6 : 9), using: &generator) {
        case 0: return "null"
        case 1: return Bool.random(using: &generator) ? "true" : "false"
        case 2: return String(Int64.random(in: -1_000...1_000, using: &generator))
        case 3: return ["-0", "0.5", "1e2", "9223372036854775807", "-9223372036854775808", "12345678901234567890"][Int.random(in: 0..<6, using: &generator)]
        case 4, 5:
            return ["\"\"", "\"k\"", "\"hello world\"", #""caf\u00e9""#, "\"é\"", #""tab\t""#, "\"a/b~c\""][Int.random(in: 0..<7, using: &generator)]
        case 6:
            let count = Int.random(in: 0..<5, using: &generator)
            return "[" + space + (0..<count).map { _ in randomDocument(depth: depth + 1, using: &generator) }.joined(separator: "," + space) + "]"
        default:
            let keys = ["a", "b", "ab", "", "z", "A", "k1", "k10", "k2"]
            let count = Int.random(in: 0..<5, using: &generator)
            let members = (0..<count).map { _ in
                "\"" + keys[Int.random(in: 0..<keys.count, using: &generator)] + "\"" + space + ":" + randomDocument(depth: depth + 1, using: &generator)
            }
            return "{" + members.joined(separator: ",") + space + "}"
        }
    }
}
