import PropertyBased
import Testing

@testable import ReelJSON

private func parse(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

@Suite struct JSONPointerTests {
    // RFC 6901 section 5, in its JSON string representation.
    static let rfcDocument = #"""
        {
           "foo": ["bar", "baz"],
           "": 0,
           "a/b": 1,
           "c%d": 2,
           "e^f": 3,
           "g|h": 4,
           "i\\j": 5,
           "k\"l": 6,
           " ": 7,
           "m~n": 8
        }
        """#

    static let rfcExamples: [(pointer: String, expected: String)] = [
        ("", rfcDocument),
        ("/foo", #"["bar", "baz"]"#),
        ("/foo/0", #""bar""#),
        ("/", "0"),
        ("/a~1b", "1"),
        ("/c%d", "2"),
        ("/e^f", "3"),
        ("/g|h", "4"),
        (#"/i\j"#, "5"),
        (#"/k"l"#, "6"),
        ("/ ", "7"),
        ("/m~0n", "8"),
    ]

    @Test(arguments: rfcExamples)
    func rfc6901Section5(pointer: String, expected: String) throws {
        let document = try parse(Self.rfcDocument)
        let value = document.value(at: try JSONPointer(pointer))
        #expect(value == (try parse(expected)))
    }

    @Test func tokensAreUnescaped() throws {
        #expect(try JSONPointer("").tokens == [])
        #expect(try JSONPointer("/").tokens == [""])
        #expect(try JSONPointer("//").tokens == ["", ""])
        #expect(try JSONPointer("/a~1b/~0").tokens == ["a/b", "~"])
        // "~01" is "~" + "1", never "/": RFC 6901 section 4 decodes ~1 before ~0.
        #expect(try JSONPointer("/~01").tokens == ["~1"])
        #expect(try JSONPointer("/~10").tokens == ["/0"])
        #expect(try JSONPointer("/é/ключ").tokens == ["é", "ключ"])
    }

    @Test(arguments: ["a", "a/b", "#/a", "/~", "/a~", "/~2", "/~a/b", "/ok/~/x"])
    func malformedPointersAreRejected(string: String) {
        let error = #expect(throws: JSONError.self) { try JSONPointer(string) }
        #expect(error?.code == .invalidPointer)
    }

    @Test func descriptionEscapes() {
        #expect(JSONPointer.root.description == "")
        #expect(JSONPointer(tokens: [""]).description == "/")
        #expect(JSONPointer(tokens: ["a/b", "~", "~1", "x"]).description == "/a~1b/~0/~01/x")
    }

    @Test func navigationHelpers() throws {
        let pointer = try JSONPointer("/a/b~1c")
        #expect(!pointer.isRoot)
        #expect(JSONPointer.root.isRoot)
        #expect(pointer.lastToken == "b/c")
        #expect(pointer.parent == (try JSONPointer("/a")))
        #expect(pointer.parent?.parent == .root)
        #expect(JSONPointer.root.parent == nil)
        #expect(JSONPointer.root.lastToken == nil)
        #expect(JSONPointer.root.appending("x/y").appending("~") == (try JSONPointer("/x~1y/~0")))
    }

    @Test func prefixes() throws {
        let a = try JSONPointer("/a"), ab = try JSONPointer("/a/b"), abLong = try JSONPointer("/ab")
        #expect(a.isPrefix(of: ab))
        #expect(a.isPrefix(of: a))
        #expect(JSONPointer.root.isPrefix(of: ab))
        #expect(!a.isPrefix(of: abLong))
        #expect(!ab.isPrefix(of: a))
        #expect(!a.isPrefix(of: .root))
    }

    @Test func arrayIndexTokens() {
        #expect(JSONPointer.arrayIndex("0") == 0)
        #expect(JSONPointer.arrayIndex("10") == 10)
        #expect(JSONPointer.arrayIndex("99999999999999999999999") == Int.max)
        for bad in ["", "01", "00", "-", "-1", "+1", " 1", "1 ", "1e2", "x", "١"] {
            #expect(JSONPointer.arrayIndex(bad) == nil, "\(bad)")
        }
    }

    @Test func stringFormRoundTrips() async {
        let token = Gen<Character?>.element(of: Array("ab~/01-") as [Character]).map { $0! }.string(of: 0...4)
        await propertyCheck(count: 300, input: token.array(of: 0...4)) { tokens in
            let pointer = JSONPointer(tokens: tokens)
            let reparsed = try JSONPointer(pointer.description)
            #expect(reparsed == pointer)
        }
    }
}

@Suite struct JSONValuePointerTests {
    @Test func valueAtMissingPlaces() throws {
        let document = try parse(#"{"a": [1, {"b": null}], "s": "text"}"#)
        #expect(document.value(at: try JSONPointer("/a/1/b")) == .null)
        for missing in ["/x", "/a/2", "/a/-", "/a/01", "/a/x", "/s/0", "/a/1/b/c", "/a/0/0"] {
            #expect(document.value(at: try JSONPointer(missing)) == nil, "\(missing)")
        }
    }

    @Test func addFollowsRFC6902() throws {
        var document = try parse(#"{"items": [1, 2], "o": {}}"#)
        try document.add("x", at: JSONPointer("/o/new"))
        try document.add("y", at: JSONPointer("/o/new"))
        try document.add(0, at: JSONPointer("/items/0"))
        try document.add(3, at: JSONPointer("/items/3"))
        try document.add(4, at: JSONPointer("/items/-"))
        #expect(document == (try parse(#"{"items": [0, 1, 2, 3, 4], "o": {"new": "y"}}"#)))
        try document.add([true], at: .root)
        #expect(document == [true])
    }

    @Test func errorsNameThePathAndTheProblem() throws {
        let original = try parse(#"{"state": {"n": 1}, "items": [1, 2, 3]}"#)
        let cases: [(operation: String, pointer: String, code: JSONError.Code, message: String)] = [
            ("add", "/state/todos/0", .pathNotFound, "no member 'todos' at /state"),
            ("add", "/items/4", .pathNotFound, "/items/4 is out of range (array has 3 elements) (the largest index to add at is 3)"),
            ("add", "/state/n/x", .typeMismatch, "cannot reach /state/n/x: /state/n is a number, not an object or array"),
            ("add", "/state/n/x/y", .pathNotFound, "cannot reach /state/n/x/y: /state/n is a number, not an object or array"),
            ("add", "/items/01", .invalidPointer, "'01' is not an array index at /items (use 0, digits without a leading zero, or '-' to append)"),
            ("remove", "/items/7", .pathNotFound, "/items/7 is out of range (array has 3 elements)"),
            ("remove", "/items/-", .pathNotFound, "/items/- refers past the end of the array (array has 3 elements); '-' can only be used to add"),
            ("remove", "/todos", .pathNotFound, "no member 'todos' at the root"),
            ("remove", "", .invalidPatch, "cannot remove the root value; replace it instead"),
            ("replace", "/state/m", .pathNotFound, "no member 'm' at /state"),
            ("replace", "/items/3", .pathNotFound, "/items/3 is out of range (array has 3 elements)"),
            ("modify", "/items/x/y", .invalidPointer, "'x' is not an array index at /items (use 0, digits without a leading zero, or '-' to append)"),
        ]
        for (operation, pointer, code, message) in cases {
            var document = original
            let path = try JSONPointer(pointer)
            let error = #expect(throws: JSONError.self, "\(operation) \(pointer)") {
                switch operation {
                case "add": try document.add(0, at: path)
                case "remove": try document.remove(at: path)
                case "replace": try document.replace(at: path, with: 0)
                default: try document.modify(at: path) { $0 = 0 }
                }
            }
            #expect(error?.code == code, "\(operation) \(pointer)")
            #expect(error?.message == message, "\(operation) \(pointer)")
            #expect(document == original, "a failed \(operation) must change nothing")
        }
    }

    @Test func removeAndReplaceReturnTheOldValue() throws {
        var document = try parse(#"{"a": [1, 2, 3], "b": {"c": "d"}}"#)
        #expect(try document.remove(at: JSONPointer("/a/1")) == 2)
        #expect(try document.remove(at: JSONPointer("/b/c")) == "d")
        #expect(try document.replace(at: JSONPointer("/a/0"), with: "one") == 1)
        #expect(try document.replace(at: .root, with: 5) == (try parse(#"{"a": ["one", 3], "b": {}}"#)))
        #expect(document == 5)
    }

    @Test func modifyEditsInPlaceAndReturnsTheBodyResult() throws {
        var document = try parse(#"{"list": [[1], [2]]}"#)
        let count = try document.modify(at: JSONPointer("/list/1")) { value in
            guard case .array(var elements) = value else { return -1 }
            elements.append(3)
            value = .array(elements)
            return elements.count
        }
        #expect(count == 2)
        #expect(document == (try parse(#"{"list": [[1], [2, 3]]}"#)))
        try document.modify(at: .root) { $0 = "whole" }
        #expect(document == "whole")
    }

    @Test func aThrowingBodyLeavesTheDocumentWhole() throws {
        var document = try parse(#"{"a": {"b": [1, 2]}}"#)
        let error = #expect(throws: JSONError.self) {
            try document.modify(at: JSONPointer("/a/b/0")) { (value) throws(JSONError) in
                value = 10
                throw JSONError(.typeMismatch, "rejected")
            }
        }
        #expect(error?.message == "rejected")
        // What the body changed before throwing stays; everything around it is put back.
        #expect(document == (try parse(#"{"a": {"b": [10, 2]}}"#)))
    }

    @Test func uniquelyHeldContainersAreEditedInPlace() throws {
        // If any container on the way to /a/b were copied, the array would be shared for a
        // moment and its next write would move it to a new buffer: the address gives it away.
        // (Some copies only happen with optimization; `swift test -c release` sees those too.)
        var list: [JSONValue] = [1, 2]
        list.reserveCapacity(64)
        var document: JSONValue = ["a": ["b": .array(list), "c": 1], "d": [0]]
        list = []
        let path = try JSONPointer("/a/b")
        func address() -> UnsafeRawPointer? {
            document.value(at: path)?.arrayValue?.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        let before = try #require(address())

        try document.add(3, at: JSONPointer("/a/b/-"))
        try document.replace(at: JSONPointer("/a/b/0"), with: 10)
        try document.remove(at: JSONPointer("/a/b/1"))
        try document.modify(at: path) { value in
            guard var elements = value.takeElements() else { return }
            elements.insert(1, at: 0)
            value = .array(elements)
        }
        try JSONPatch([
            .add(path: try JSONPointer("/a/b/-"), value: 4),
            .replace(path: try JSONPointer("/a/c"), value: 2),
            .move(from: try JSONPointer("/d"), path: try JSONPointer("/e")),
            .test(path: try JSONPointer("/e/0"), value: 0),
        ]).apply(to: &document)
        #expect(throws: JSONError.self) {
            try JSONPatch([
                .add(path: try JSONPointer("/a/b/0"), value: 5),
                .remove(path: try JSONPointer("/e")),
                .test(path: try JSONPointer("/a/c"), value: "no"),
            ]).apply(to: &document)
        }
        JSONMergePatch.apply(["a": ["c": 3, "x": nil], "e": nil], to: &document)
        try document.add(6, at: JSONPointer("/a/b/-"))
        #expect(document == ["a": ["b": [1, 10, 3, 4, 6], "c": 3]])
        #expect(address() == before)

        // The control: with a second reference alive the same edit must copy, or this test
        // could not see a copy at all.
        let snapshot = document
        try document.add(7, at: JSONPointer("/a/b/-"))
        #expect(address() != before)
        #expect(snapshot.value(at: path) == [1, 10, 3, 4, 6])
    }

    @Test func mutationsKeepValueSemantics() throws {
        var document = try parse(#"{"a": {"b": [1, 2]}, "c": [3]}"#)
        let snapshot = document
        try document.add(9, at: JSONPointer("/a/b/-"))
        try document.remove(at: JSONPointer("/c/0"))
        try document.replace(at: JSONPointer("/a/b/0"), with: 0)
        try document.modify(at: JSONPointer("/c")) { $0 = "c" }
        #expect(document == (try parse(#"{"a": {"b": [0, 2, 9]}, "c": "c"}"#)))
        #expect(snapshot == (try parse(#"{"a": {"b": [1, 2]}, "c": [3]}"#)))
    }
}
