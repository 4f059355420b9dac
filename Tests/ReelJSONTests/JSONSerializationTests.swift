import PropertyBased
import Testing

@testable import ReelJSON

@Suite struct JSONSerializationTests {
    @Test func scalars() {
        #expect(JSONValue.null.jsonString == "null")
        #expect(JSONValue.bool(true).jsonString == "true")
        #expect(JSONValue.bool(false).jsonString == "false")
        #expect(JSONValue.int(0).jsonString == "0")
        #expect(JSONValue.int(7).jsonString == "7")
        #expect(JSONValue.int(-42).jsonString == "-42")
        #expect(JSONValue.int(.max).jsonString == "9223372036854775807")
        #expect(JSONValue.int(.min).jsonString == "-9223372036854775808")
        #expect(JSONValue.string("").jsonString == #""""#)
    }

    @Test func doublesUseTheShortestRoundTripForm() {
        #expect(JSONValue.double(5).jsonString == "5.0")
        #expect(JSONValue.double(-2.5).jsonString == "-2.5")
        #expect(JSONValue.double(0.1).jsonString == "0.1")
        #expect(JSONValue.double(1e-7).jsonString == "1e-07")
        #expect(JSONValue.double(1e16).jsonString == "1e+16")
        #expect(JSONValue.double(-0.0).jsonString == "-0.0")
        #expect(JSONValue.double(.leastNonzeroMagnitude).jsonString == "5e-324")
        #expect(JSONValue.double(.infinity).jsonString == "null")
        #expect(JSONValue.double(-.infinity).jsonString == "null")
        #expect(JSONValue.double(.nan).jsonString == "null")
        #expect(JSONValue.array([.double(.nan), 1]).jsonString == "[null,1]")
    }

    @Test func escapesOnlyWhatJSONRequires() {
        #expect(JSONValue.string("a\"b\\c/d").jsonString == #""a\"b\\c/d""#)
        #expect(JSONValue.string("\n\r\t\u{8}\u{C}").jsonString == #""\n\r\t\b\f""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{1F}").jsonString == #""\u0000\u0001\u001f""#)
        #expect(JSONValue.string("\u{7F} é 😀 \u{2028}").jsonString == "\"\u{7F} é 😀 \u{2028}\"")
        #expect(JSONValue.string("end\n").jsonString == #""end\n""#)
    }

    @Test func objectMembersAreSortedByUTF8Bytes() {
        let value: JSONValue = ["b": 1, "a": 2, "aa": 3, "B": 4, "": 5, "é": 6, "z": 7, "\u{FFFF}": 8, "😀": 9]
        #expect(value.jsonString == #"{"":5,"B":4,"a":2,"aa":3,"b":1,"z":7,"é":6,"\#u{FFFF}":8,"😀":9}"#)

        // String's own `<` compares canonically (as if "e\u{301}z" were "éz", after "f"); bytes put
        // 0x65 ('e') before 0x66 ('f').
        let decomposed: JSONValue = ["f": 1, "e\u{301}z": 2]
        #expect(decomposed.jsonString == "{\"e\u{301}z\":2,\"f\":1}")
        #expect(("e\u{301}z" < "f") == false)  // the premise of this test
    }

    /// Objects of every size up to past the 16 members ordered in stack memory, with keys that
    /// share prefixes and mix one- to four-byte characters: members come out in UTF-8 byte order,
    /// in the text and in the binary encoding alike.
    @Test func membersComeOutInByteOrderAtEverySize() throws {
        let alphabet = ["a", "b", "B", "é", "e\u{301}", "z", "😀", "\u{FFFF}", "0"]
        var generator = SystemRandomNumberGenerator()
        for size in 0...40 {
            var members: JSONObject = [:]
            while members.count < size {
                let key = (0..<Int.random(in: 0...3, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
                members[key] = .int(Int64(members.count))
            }
            let ordered = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let expected = "{" + ordered.map { "\"\($0)\":\(members[$0]!.jsonString)" }.joined(separator: ",") + "}"
            #expect(JSONValue.object(members).jsonString == expected, "size \(size)")
            var writer = BinaryWriter()
            writer.writeJSON(.object(members))
            var reference = BinaryWriter()
            reference.writeUInt8(BinaryTag.object)
            reference.writeVarint(UInt64(members.count))
            for key in ordered {
                reference.writeString(key)
                reference.writeJSON(members[key]!)
            }
            #expect(writer.bytes == reference.bytes, "size \(size)")
        }
    }

    @Test func nestedContainers() {
        let value: JSONValue = ["list": [1, [2, []], [:]], "map": ["y": nil, "x": true]]
        #expect(value.jsonString == #"{"list":[1,[2,[]],{}],"map":{"x":true,"y":null}}"#)
        #expect(value.serialized() == Array(value.jsonString.utf8))
        #expect(value.description == value.jsonString)
        #expect("\(value)" == value.jsonString)
    }

    @Test func serializeIntoAppends() {
        var bytes = Array("prefix:".utf8)
        JSONValue.array([1, "x"]).serialize(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"prefix:[1,"x"]"#)
    }

    @Test func prettyPrinting() {
        let value: JSONValue = ["b": [1, ["c": "d"]], "a": [:], "e": [], "f": "line\nbreak"]
        let expected = """
            {
              "a": {},
              "b": [
                1,
                {
                  "c": "d"
                }
              ],
              "e": [],
              "f": "line\\nbreak"
            }
            """
        #expect(value.prettyPrinted() == expected)
        #expect(JSONValue.array([1]).prettyPrinted(indent: 4) == "[\n    1\n]")
        #expect(JSONValue.array([[1]]).prettyPrinted(indent: 0) == "[\n[\n1\n]\n]")
        #expect(JSONValue.string("x").prettyPrinted() == #""x""#)
    }

    @Test func compactOutputIsCanonicalAndSingleLine() async {
        await propertyCheck(count: 300, input: JSONFixtures.value) { value in
            let bytes = value.serialized()
            // Every control character is escaped, so no raw newline (or tab, or CR) can appear.
            #expect(!bytes.contains { $0 < 0x20 })
            // Serializing what was parsed gives the same bytes: the form is a fixed point.
            let reparsed = try JSONValue(parsing: bytes)
            #expect(reparsed.serialized() == bytes)
        }
    }

    @Test func prettyOutputParsesBackToTheSameValue() async {
        await propertyCheck(count: 200, input: JSONFixtures.value) { value in
            let pretty = value.prettyPrinted(indent: 3)
            let parsed = try JSONValue(parsing: pretty)
            #expect(JSONFixtures.identical(parsed, value), "\(pretty)")
        }
    }

    @Test func equalObjectsBuiltInDifferentOrdersSerializeIdentically() async {
        let objects = JSONFixtures.value.map { value -> JSONObject in
            if case .object(let members) = value, members.count > 1 { return members }
            return ["k": value, "a": 1, "é": [value], "Z": nil]
        }
        await propertyCheck(count: 100, input: objects) { members in
            let value = JSONValue.object(members)
            var rebuilt: JSONObject = [:]
            for (key, member) in members.reversed() { rebuilt[key] = member }
            #expect(JSONValue.object(rebuilt).serialized() == value.serialized())
        }
    }
}
