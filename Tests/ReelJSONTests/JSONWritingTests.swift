import ReelJSON
import Testing

/// Writing JSON straight into bytes gives the canonical text of the equal value.
struct JSONWritingTests {
    @Test func aPatchWritesTheTextOfItsJSONValue() throws {
        let patch = JSONPatch([
            .add(path: try JSONPointer("/a/-"), value: ["z": 1, "a": [true, nil]]),
            .remove(path: try JSONPointer("/b~1c")),
            .replace(path: try JSONPointer(""), value: 2.5),
            .move(from: try JSONPointer("/x"), path: try JSONPointer("/y")),
            .copy(from: try JSONPointer("/y"), path: try JSONPointer("/z")),
            .test(path: try JSONPointer("/q"), value: "é\n"),
        ])
        var bytes: [UInt8] = []
        patch.writeJSON(into: &bytes)
        #expect(bytes == patch.jsonValue.serialized())
        #expect(try JSONPatch(JSONValue(parsing: bytes)) == patch)
    }

    @Test func objectsWrittenMemberByMemberAreCanonical() throws {
        var bytes = Array("x".utf8)
        bytes.appendJSONObject { members in
            members.add("a", "text \"quoted\"")
            members.add("b", ifPresent: Optional<Int>.none)
            members.add("c", [UInt64(1), UInt64.max])
            members.add("d") { $0.appendJSONObject { inner in inner.add("k", true) } }
        }
        #expect(String(decoding: bytes, as: UTF8.self) == #"x{"a":"text \"quoted\"","c":[1,9223372036854775807],"d":{"k":true}}"#)
        #expect(try JSONValue(parsing: Array(bytes.dropFirst())).serialized() == Array(bytes.dropFirst()))
    }
}
