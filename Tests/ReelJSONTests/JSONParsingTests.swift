import PropertyBased
import Testing

@testable import ReelJSON

/// Random JSON values and a strict comparison, shared by the parsing, serialization, binary and
/// Codable tests.
enum JSONFixtures {
    /// Random values up to 4 levels deep, shrinking towards smaller containers and `null`.
    static let value = Generator<JSONValue, [JSONValue]>(
        run: { rng in randomValue(&rng, depth: 4) },
        shrink: { shrinkCandidates($0) }
    )

    static func randomValue(_ rng: inout some RandomNumberGenerator, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 9 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(randomInt(&rng))
        case 3: return .double(randomDouble(&rng))
        case 4, 5: return .string(randomString(&rng))
        case 6, 7:
            var elements: [JSONValue] = []
            for _ in 0..<Int.random(in: 0...5, using: &rng) { elements.append(randomValue(&rng, depth: depth - 1)) }
            return .array(elements)
        default:
            var members: JSONObject = [:]
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                members[randomString(&rng)] = randomValue(&rng, depth: depth - 1)
            }
            return .object(members)
        }
    }

    static func randomInt(_ rng: inout some RandomNumberGenerator) -> Int64 {
        let edges: [Int64] = [0, 1, -1, .max, .min, .max - 1, .min + 1, 1 << 53, -(1 << 53) - 1, 127, 128, -64, -65]
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return edges.randomElement(using: &rng)!
        case 1: return Int64.random(in: -1000...1000, using: &rng)
        default: return Int64.random(in: .min ... .max, using: &rng)
        }
    }

    static func randomDouble(_ rng: inout some RandomNumberGenerator) -> Double {
        let edges: [Double] = [0, -0.0, 0.1, 5, -2.5, 1e-7, 1e16, 1e300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 123.456]
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return edges.randomElement(using: &rng)!
        case 1: return Double.random(in: -1e6...1e6, using: &rng)
        default:
            while true {  // any finite bit pattern: subnormals, huge exponents, negative zero
                let double = Double(bitPattern: rng.next())
                if double.isFinite { return double }
            }
        }
    }

    /// Strings mixing plain ASCII with every kind of character the text and binary forms treat
    /// specially: quotes, backslashes, control characters, multi-byte UTF-8, astral scalars,
    /// combining marks and line separators. Some are long, to cover the 8-byte scanning path.
    static func randomString(_ rng: inout some RandomNumberGenerator) -> String {
        let special: [Unicode.Scalar] = [
            "\"", "\\", "/", "\u{0}", "\u{1}", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{1F}", "\u{7F}",
            "é", "€", "😀", "\u{301}", "\u{2028}", "\u{FFFF}", "\u{10FFFF}", " ",
        ]
        var scalars = String.UnicodeScalarView()
        let length = Bool.random(using: &rng) ? Int.random(in: 0...6, using: &rng) : Int.random(in: 0...40, using: &rng)
        for _ in 0..<length {
            if Int.random(in: 0..<5, using: &rng) == 0 {
                scalars.append(special.randomElement(using: &rng)!)
            } else {
                scalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng)))
            }
        }
        return String(scalars)
    }

    static func shrinkCandidates(_ value: JSONValue) -> [JSONValue] {
        switch value {
        case .null: return []
        case .array(let elements):
            return [.null] + elements + elements.indices.map { index in
                var fewer = elements
                fewer.remove(at: index)
                return .array(fewer)
            }
        case .object(let members):
            return [.null] + Array(members.values) + members.keys.map { key in
                var fewer = members
                fewer[key] = nil
                return .object(fewer)
            }
        case .string(let string) where !string.isEmpty: return [.null, .string("")]
        default: return [.null]
        }
    }

    /// Equality that `==` does not give: `.int(1)` differs from `.double(1.0)`, and doubles compare by
    /// bit pattern (so `-0.0` differs from `0.0`).
    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return Array(x.unicodeScalars) == Array(y.unicodeScalars)
        case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case let (.object(x), .object(y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { identical(value, $0) } ?? false }
        default: return false
        }
    }
}

/// Parses `text`, expecting a syntax error, and returns it.
private func syntaxError(_ bytes: [UInt8]) -> JSONError? {
    do throws(JSONError) {
        let value = try JSONValue(parsing: bytes)
        Issue.record("expected a syntax error, parsed \(value)")
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONParsingTests {
    @Test func parsesScalarsAtTopLevel() throws {
        #expect(JSONFixtures.identical(try JSONValue(parsing: "null"), .null))
        #expect(JSONFixtures.identical(try JSONValue(parsing: " true "), .bool(true)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "\tfalse\r\n"), .bool(false)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "42"), .int(42)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: #""hi""#), .string("hi")))
    }

    @Test func parsesNestedDocument() throws {
        let text = #" { "name" : "reel" , "tags" : [ 1 , 2.5 , null , true , { } , [ ] ] , "nested" : { "a" : { "b" : [ "c" ] } } } "#
        let expected: JSONValue = ["name": "reel", "tags": [1, 2.5, nil, true, [:], []], "nested": ["a": ["b": ["c"]]]]
        #expect(try JSONValue(parsing: text) == expected)
    }

    @Test func allThreeEntryPointsAgree() throws {
        let text = #"{"a":[1,"é",{"b":null}]}"#
        let fromString = try JSONValue(parsing: text)
        let fromArray = try JSONValue(parsing: Array(text.utf8))
        let fromBuffer = try Array(text.utf8).withUnsafeBytes { try JSONValue(parsing: $0) }
        #expect(fromString == fromArray)
        #expect(fromArray == fromBuffer)
    }

    @Test func duplicateKeysKeepTheLastValue() throws {
        #expect(try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#) == ["a": 3, "b": 2])
    }

    @Test(arguments: [
        // (document, offset of the error)
        ("", 0), (" ", 1), ("[1,]", 2), (#"{"a":1,}"#, 6), ("[1,,2]", 3), ("[1 2]", 3), (#"{"a" 1}"#, 5),
        ("{1:2}", 1), (#"{"a":}"#, 5), ("[", 1), ("]", 0), ("[1] x", 4), ("1 2", 2), ("nul", 0), ("tru e", 0),
        ("NaN", 0), ("Infinity", 0), ("'a'", 0), ("01", 0), ("-01", 0), ("00", 0), ("1.", 2), (".5", 0),
        ("+1", 0), ("1e", 2), ("1e+", 3), ("-", 1), ("--1", 1), ("0x10", 1), ("1e400", 0), ("-1e400", 0),
        ("\"a\nb\"", 2), ("\"tab\there\"", 4), ("\"\\x\"", 1), ("\"\\u12\"", 1), ("\"\\u12G4\"", 1),
        ("\"\\uD800\"", 1), ("\"\\uDC00\"", 1), ("\"\\uD800\\u0041\"", 1), ("\"\\uD800x\"", 1),
        ("\"abc", 4), ("\"abc\\", 4), ("1\u{0}", 1), ("\u{FEFF}1", 0), ("\u{C}1", 0), ("\u{A0}1", 0),
        (#"{"a":1 "b":2}"#, 7), (#"{"a":1]"#, 6), ("[1}", 2), ("[\"a\",]", 4),
    ])
    func rejectsInvalidTextAtTheRightOffset(document: String, offset: Int) throws {
        let error = try #require(syntaxError(Array(document.utf8)))
        #expect(error.code == .syntax)
        #expect(error.offset == offset)
        #expect(error.message.hasSuffix("at byte \(offset)"))
    }

    @Test(arguments: [
        // (bytes, offset): ill-formed UTF-8 inside a string
        ([0x22, 0xC3, 0x28, 0x22], 1),  // bad continuation
        ([0x22, 0xC0, 0xAF, 0x22], 1),  // overlong '/'
        ([0x22, 0xE0, 0x80, 0xAF, 0x22], 1),  // overlong, 3 bytes
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // encoded surrogate U+D800
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
        ([0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22], 1),  // 5-byte form
        ([0x22, 0x80, 0x22], 1),  // lone continuation
        ([0x22, 0xE2, 0x82], 1),  // truncated at end of input
        ([0x22, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0xFF, 0x22], 9),  // after an 8-byte run
        ([0xC3, 0xA9], 0),  // valid UTF-8, but not a value
    ] as [([UInt8], Int)])
    func rejectsInvalidUTF8(bytes: [UInt8], offset: Int) throws {
        let error = try #require(syntaxError(bytes))
        #expect(error.code == .syntax)
        #expect(error.offset == offset)
    }

    @Test func errorMessagesSayWhatWasExpected() throws {
        let error = try #require(syntaxError(Array(#"{"key" 1}"#.utf8)))
        #expect(error.message == "expected ':' after object key, found '1' at byte 7")
        let trailing = try #require(syntaxError(Array("[1,2,]".utf8)))
        #expect(trailing.message == "trailing comma before ']' at byte 4")
        let end = try #require(syntaxError(Array("[1".utf8)))
        #expect(end.message == "expected ',' or ']' after array element, found end of input at byte 2")
    }

    @Test func numbers() throws {
        #expect(JSONFixtures.identical(try JSONValue(parsing: "9223372036854775807"), .int(.max)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "-9223372036854775808"), .int(.min)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "9223372036854775808"), .double(9223372036854775808.0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "-9223372036854775809"), .double(-9223372036854775809.0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "0"), .int(0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "-0"), .double(-0.0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "-0.0"), .double(-0.0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "1.5e3"), .double(1500)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "1E2"), .double(100)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "2e-1"), .double(0.2)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "1.0"), .double(1)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "0.1"), .double(0.1)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "1e-400"), .double(0)))  // underflow is fine
        #expect(JSONFixtures.identical(try JSONValue(parsing: "1.7976931348623157e308"), .double(.greatestFiniteMagnitude)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "123456789012345678901234567890"), .double(123456789012345678901234567890.0)))
        #expect(JSONFixtures.identical(try JSONValue(parsing: "[-1,10,-10]"), .array([.int(-1), .int(10), .int(-10)])))
        let tooBig = try #require(syntaxError(Array("[1, 1e400]".utf8)))
        #expect(tooBig.offset == 4)
        #expect(tooBig.message == "number 1e400 is out of range at byte 4")
    }

    @Test func escapes() throws {
        #expect(try JSONValue(parsing: #""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSONValue(parsing: #""\u00e9\u00C9\u0000\u001f""#) == .string("éÉ\u{0}\u{1F}"))
        #expect(try JSONValue(parsing: #""\uD83D\uDE00 \ud83d\ude00""#) == .string("😀 😀"))
        #expect(try JSONValue(parsing: #""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSONValue(parsing: "\"é😀\u{301}\"") == .string("é😀\u{301}"))
        #expect(try JSONValue(parsing: #""a\nb" "#) == .string("a\nb"))
        // Escapes in keys, and a string after an escaped one (the scratch buffer is reused).
        #expect(try JSONValue(parsing: #"{"k\u0065y":"x\ty","plain":"z"}"#) == ["key": "x\ty", "plain": "z"])
    }

    /// The scanner reads 8 bytes at a time: put the character that stops it at every position.
    @Test func specialCharactersAtEveryPositionOfAWord() throws {
        for prefix in 0..<20 {
            let run = String(repeating: "a", count: prefix)
            #expect(try JSONValue(parsing: "\"\(run)\\n\(run)\"") == .string("\(run)\n\(run)"))
            #expect(try JSONValue(parsing: "\"\(run)é\(run)\"") == .string("\(run)é\(run)"))
            #expect(try JSONValue(parsing: "[\"\(run)\",\"\(run)\"]") == [.string(run), .string(run)])
            let control = try #require(syntaxError(Array("\"\(run)\u{1}\(run)\"".utf8)))
            #expect(control.offset == 1 + prefix)
            let unterminated = try #require(syntaxError(Array("\"\(run)".utf8)))
            #expect(unterminated.offset == 1 + prefix)
        }
    }

    @Test func depthLimit() throws {
        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONValue(parsing: deepest) }

        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: JSONError.self) { try JSONValue(parsing: tooDeep) }
        do throws(JSONError) {
            _ = try JSONValue(parsing: tooDeep)
        } catch {
            #expect(error.code == .tooDeep)
            #expect(error.offset == 512)
        }

        let objects = String(repeating: #"{"a":"#, count: 10) + "1" + String(repeating: "}", count: 10)
        #expect(throws: Never.self) { try JSONValue(parsing: objects, maxDepth: 10) }
        #expect(throws: JSONError(.tooDeep, "arrays and objects nest deeper than 9 levels at byte 45", offset: 45)) {
            try JSONValue(parsing: objects, maxDepth: 9)
        }
        #expect(throws: Never.self) { try JSONValue(parsing: "1", maxDepth: 0) }
        #expect(throws: JSONError.self) { try JSONValue(parsing: "[]", maxDepth: 0) }
    }

    @Test func hugeNestingFailsWithoutExhaustingTheStack() throws {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: JSONError.self) { try JSONValue(parsing: bytes) }
        do throws(JSONError) {
            _ = try JSONValue(parsing: bytes)
        } catch {
            #expect(error.code == .tooDeep)
        }
    }

    @Test func onlyJSONWhitespaceIsSkipped() throws {
        #expect(try JSONValue(parsing: " \t\r\n[ \t\r\n1 \t\r\n] \t\r\n") == [1])
        #expect(syntaxError(Array("\u{B}1".utf8))?.offset == 0)  // vertical tab
        #expect(syntaxError(Array("1\u{2028}".utf8))?.offset == 1)
    }

    @Test func parsingIsTheInverseOfSerializing() async {
        await propertyCheck(count: 300, input: JSONFixtures.value) { value in
            let text = value.serialized()
            let parsed = try JSONValue(parsing: text)
            #expect(JSONFixtures.identical(parsed, value), "\(value.jsonString)")
            #expect(try JSONValue(parsing: value.jsonString) == value)
        }
    }
}
