import PropertyBased
import Testing

@testable import ReelJSON

private func parse(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

/// One example of RFC 6902 appendix A; `expected == nil` means the patch must fail.
struct RFC6902Example: Sendable, CustomTestStringConvertible {
    var section: String
    var document: String
    var patch: String
    var expected: String?
    var testDescription: String { section }
}

@Suite struct JSONPatchTests {
    static let appendixA: [RFC6902Example] = [
        .init(
            section: "A.1 Adding an Object Member", document: #"{"foo": "bar"}"#,
            patch: #"[{"op": "add", "path": "/baz", "value": "qux"}]"#,
            expected: #"{"baz": "qux", "foo": "bar"}"#),
        .init(
            section: "A.2 Adding an Array Element", document: #"{"foo": ["bar", "baz"]}"#,
            patch: #"[{"op": "add", "path": "/foo/1", "value": "qux"}]"#,
            expected: #"{"foo": ["bar", "qux", "baz"]}"#),
        .init(
            section: "A.3 Removing an Object Member", document: #"{"baz": "qux", "foo": "bar"}"#,
            patch: #"[{"op": "remove", "path": "/baz"}]"#,
            expected: #"{"foo": "bar"}"#),
        .init(
            section: "A.4 Removing an Array Element", document: #"{"foo": ["bar", "qux", "baz"]}"#,
            patch: #"[{"op": "remove", "path": "/foo/1"}]"#,
            expected: #"{"foo": ["bar", "baz"]}"#),
        .init(
            section: "A.5 Replacing a Value", document: #"{"baz": "qux", "foo": "bar"}"#,
            patch: #"[{"op": "replace", "path": "/baz", "value": "boo"}]"#,
            expected: #"{"baz": "boo", "foo": "bar"}"#),
        .init(
            section: "A.6 Moving a Value",
            document: #"{"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}"#,
            patch: #"[{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]"#,
            expected: #"{"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}"#),
        .init(
            section: "A.7 Moving an Array Element", document: #"{"foo": ["all", "grass", "cows", "eat"]}"#,
            patch: #"[{"op": "move", "from": "/foo/1", "path": "/foo/3"}]"#,
            expected: #"{"foo": ["all", "cows", "eat", "grass"]}"#),
        .init(
            section: "A.8 Testing a Value: Success", document: #"{"baz": "qux", "foo": ["a", 2, "c"]}"#,
            patch: #"[{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]"#,
            expected: #"{"baz": "qux", "foo": ["a", 2, "c"]}"#),
        .init(
            section: "A.9 Testing a Value: Error", document: #"{"baz": "qux"}"#,
            patch: #"[{"op": "test", "path": "/baz", "value": "bar"}]"#,
            expected: nil),
        .init(
            section: "A.10 Adding a Nested Member Object", document: #"{"foo": "bar"}"#,
            patch: #"[{"op": "add", "path": "/child", "value": {"grandchild": {}}}]"#,
            expected: #"{"foo": "bar", "child": {"grandchild": {}}}"#),
        .init(
            section: "A.11 Ignoring Unrecognized Elements", document: #"{"foo": "bar"}"#,
            patch: #"[{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]"#,
            expected: #"{"foo": "bar", "baz": "qux"}"#),
        .init(
            section: "A.12 Adding to a Nonexistent Target", document: #"{"foo": "bar"}"#,
            patch: #"[{"op": "add", "path": "/baz/bat", "value": "qux"}]"#,
            expected: nil),
        // The parser keeps the last of repeated keys, so this reads as `remove /baz`, which fails
        // because there is no /baz: the document is still rejected, as the RFC requires.
        .init(
            section: "A.13 Invalid JSON Patch Document", document: #"{"foo": "bar"}"#,
            patch: #"[{"op": "add", "path": "/baz", "value": "qux", "op": "remove"}]"#,
            expected: nil),
        .init(
            section: "A.14 ~ Escape Ordering", document: #"{"/": 9, "~1": 10}"#,
            patch: #"[{"op": "test", "path": "/~01", "value": 10}]"#,
            expected: #"{"/": 9, "~1": 10}"#),
        .init(
            section: "A.15 Comparing Strings and Numbers", document: #"{"/": 9, "~1": 10}"#,
            patch: #"[{"op": "test", "path": "/~01", "value": "10"}]"#,
            expected: nil),
        .init(
            section: "A.16 Adding an Array Value", document: #"{"foo": ["bar"]}"#,
            patch: #"[{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]"#,
            expected: #"{"foo": ["bar", ["abc", "def"]]}"#),
    ]

    @Test(arguments: appendixA)
    func rfc6902AppendixA(example: RFC6902Example) throws {
        let original = try parse(example.document)
        var document = original
        let patch = try JSONPatch(parse(example.patch))
        if let expected = example.expected {
            try patch.apply(to: &document)
            #expect(document == (try parse(expected)))
        } else {
            #expect(throws: JSONError.self) { try patch.apply(to: &document) }
            #expect(JSONTestSupport.isIdentical(document, original))
        }
    }

    @Test func failureMessagesNameTheOperation() throws {
        var document = try parse(#"{"baz": "qux", "list": [1]}"#)
        let patch = try JSONPatch(parse(#"""
            [{"op": "test", "path": "/baz", "value": "qux"},
             {"op": "add", "path": "/list/5", "value": 1}]
            """#))
        let error = #expect(throws: JSONError.self) { try patch.apply(to: &document) }
        #expect(error?.code == .pathNotFound)
        #expect(error?.message == "operation 1 (add /list/5): /list/5 is out of range (array has 1 element) (the largest index to add at is 1)")

        let test = JSONPatch([.test(path: try JSONPointer("/baz"), value: 1)])
        let testError = #expect(throws: JSONError.self) { try test.apply(to: &document) }
        #expect(testError?.code == .invalidPatch)
        #expect(testError?.message == "operation 0 (test /baz): test failed: the string at /baz is not equal to the expected number")
    }

    @Test func moveRules() throws {
        let original = try parse(#"{"a": {"b": {"c": 1}}, "list": [1, 2, 3]}"#)
        var document = original
        let intoChild = JSONPatch([.move(from: try JSONPointer("/a"), path: try JSONPointer("/a/b/x"))])
        let error = #expect(throws: JSONError.self) { try intoChild.apply(to: &document) }
        #expect(error?.code == .invalidPatch)
        #expect(error?.message == "operation 0 (move /a to /a/b/x): cannot move /a into its own child /a/b/x")

        // Removing /a succeeds, adding under the now-missing /a fails: the move as a whole fails.
        let afterRemoval = JSONPatch([.move(from: try JSONPointer("/a/b"), path: try JSONPointer("/a/b/c/d"))])
        #expect(throws: JSONError.self) { try afterRemoval.apply(to: &document) }
        let toNowhere = JSONPatch([.move(from: try JSONPointer("/list/0"), path: try JSONPointer("/nowhere/x"))])
        #expect(throws: JSONError.self) { try toNowhere.apply(to: &document) }
        #expect(JSONTestSupport.isIdentical(document, original))

        let selfMoves = JSONPatch([
            .move(from: .root, path: .root),
            .move(from: try JSONPointer("/list/2"), path: try JSONPointer("/list/2")),
        ])
        try selfMoves.apply(to: &document)
        #expect(JSONTestSupport.isIdentical(document, original))

        try JSONPatch([.move(from: try JSONPointer("/a/b"), path: .root)]).apply(to: &document)
        #expect(document == ["c": 1])
        try JSONPatch([.move(from: try JSONPointer("/c"), path: try JSONPointer("/d"))]).apply(to: &document)
        #expect(document == ["d": 1])
    }

    @Test func copySharesNothingObservable() throws {
        var document = try parse(#"{"a": {"x": [1]}}"#)
        try JSONPatch([
            .copy(from: try JSONPointer("/a"), path: try JSONPointer("/b")),
            .add(path: try JSONPointer("/b/x/-"), value: 2),
            .copy(from: try JSONPointer("/a"), path: try JSONPointer("/a/self")),
        ]).apply(to: &document)
        #expect(document == (try parse(#"{"a": {"x": [1], "self": {"x": [1]}}, "b": {"x": [1, 2]}}"#)))
    }

    @Test func testComparesNumbersByValue() throws {
        var document = try parse(#"{"n": 1, "list": [1.0, {"k": 2}]}"#)
        try JSONPatch([
            .test(path: try JSONPointer("/n"), value: .double(1)),
            .test(path: try JSONPointer("/list"), value: [.int(1), ["k": .double(2)]]),
        ]).apply(to: &document)
    }

    // MARK: Atomicity

    /// Operations that all succeed on `atomicityDocument`, covering every kind and the
    /// outcomes of `add` (new member, replaced member, insert, append, root).
    static let succeedingOperations: [JSONPatch.Operation] = {
        func p(_ s: String) -> JSONPointer { try! JSONPointer(s) }
        return [
            .add(path: p("/new"), value: ["deep": [1]]),
            .add(path: p("/obj/k"), value: "replaced"),
            .add(path: p("/list/1"), value: 1.5),
            .add(path: p("/list/-"), value: [true]),
            .add(path: p(""), value: ["list": [0, 0, 0], "obj": [:]]),
            .remove(path: p("/obj")),
            .remove(path: p("/list/0")),
            .replace(path: p("/n"), value: .double(1)),
            .replace(path: p("/list/2"), value: ["x": nil]),
            .move(from: p("/obj/k"), path: p("/moved")),
            .move(from: p("/list/0"), path: p("/list/-")),
            .move(from: p("/n"), path: p("/list/0")),
            .move(from: p("/obj/k"), path: p("/obj/~1")),
            .copy(from: p("/obj"), path: p("/list/0")),
            .copy(from: p("/list"), path: p("/n")),
            .test(path: p("/list/1"), value: 2),
            .test(path: p("/obj"), value: ["k": "v", "/": nil]),
        ]
    }()

    /// Operations that fail on the document whatever the operations before them did.
    static let failingOperations: [JSONPatch.Operation] = {
        func p(_ s: String) -> JSONPointer { try! JSONPointer(s) }
        return [
            .add(path: p("/missing/x"), value: 1),
            .remove(path: p("/missing")),
            .replace(path: p("/list/99"), value: 1),
            .move(from: p("/missing"), path: p("/x")),
            .move(from: p("/list"), path: p("/missing/x")),
            .copy(from: p("/list/-"), path: p("/x")),
            .test(path: p(""), value: "never"),
        ]
    }()

    static let atomicityDocument: JSONValue = [
        "n": 7, "obj": ["k": "v", "/": nil], "list": [1, 2, 3, ["nested": [4]]],
    ]

    @Test func aFailingThirdOperationUndoesTheFirstTwo() throws {
        for first in Self.succeedingOperations {
            for second in Self.succeedingOperations {
                // Only pairs where the second operation still applies after the first count.
                var probe = Self.atomicityDocument
                guard (try? JSONPatch([first, second]).apply(to: &probe)) != nil else { continue }
                for failing in Self.failingOperations {
                    var document = Self.atomicityDocument
                    let patch = JSONPatch([first, second, failing])
                    let error = #expect(throws: JSONError.self, "\(patch.jsonValue)") {
                        try patch.apply(to: &document)
                    }
                    #expect(error?.message.hasPrefix("operation 2 ") == true)
                    #expect(
                        JSONTestSupport.isIdentical(document, Self.atomicityDocument),
                        "\(patch.jsonValue) left \(document)")
                }
            }
        }
    }

    @Test func everyOperationKindIsCoveredByAtomicityPairs() throws {
        // Guards the test above against silently skipping kinds: each succeeding operation must
        // apply on its own, and the survivors of the pair filter must include every kind.
        var kinds: Set<String> = []
        for first in Self.succeedingOperations {
            var document = Self.atomicityDocument
            try JSONPatch([first]).apply(to: &document)
            for second in Self.succeedingOperations {
                var probe = Self.atomicityDocument
                if (try? JSONPatch([first, second]).apply(to: &probe)) != nil {
                    kinds.insert(first.name)
                    kinds.insert(second.name)
                }
            }
        }
        #expect(kinds == ["add", "remove", "replace", "move", "copy", "test"])
    }

    @Test func randomPatchesFollowedByAFailureChangeNothing() async {
        await propertyCheck(count: 300, input: JSONTestSupport.pairs) { source, target in
            var patch = JSONPatch(from: source, to: target)
            patch.operations.append(.test(path: .root, value: "never equal"))
            var document = source
            #expect(throws: JSONError.self) { try patch.apply(to: &document) }
            #expect(JSONTestSupport.isIdentical(document, source))
        }
    }

    // MARK: JSON form

    @Test func malformedPatchesAreRejected() throws {
        let cases: [(json: String, message: String)] = [
            (#"{"op": "add"}"#, "a JSON Patch must be an array of operations, not object"),
            (#"[1]"#, "operation 0: must be an object, not number"),
            (#"[{"path": "/a"}]"#, "operation 0: missing 'op'"),
            (#"[{"op": 1, "path": "/a"}]"#, "operation 0: 'op' must be a string, not number"),
            (#"[{"op": "test", "path": "", "value": 1}, {"op": "delete", "path": "/a"}]"#,
             "operation 1: unknown op 'delete' (expected add, remove, replace, move, copy or test)"),
            (#"[{"op": "remove", "path": "/a"}, {"op": "remove", "path": "/b"}, {"op": "add", "value": 1}]"#,
             "operation 2: missing 'path'"),
            (#"[{"op": "add", "path": "/a"}]"#, "operation 0: missing 'value'"),
            (#"[{"op": "replace", "path": "/a"}]"#, "operation 0: missing 'value'"),
            (#"[{"op": "test", "path": "/a"}]"#, "operation 0: missing 'value'"),
            (#"[{"op": "move", "path": "/a"}]"#, "operation 0: missing 'from'"),
            (#"[{"op": "copy", "from": 3, "path": "/a"}]"#, "operation 0: 'from' must be a string, not number"),
            (#"[{"op": "remove", "path": "a"}]"#,
             #"operation 0: invalid 'path': JSON Pointer "a" must be empty or start with '/'"#),
        ]
        for (json, message) in cases {
            let error = #expect(throws: JSONError.self, "\(json)") { try JSONPatch(parse(json)) }
            #expect(error?.code == .invalidPatch)
            #expect(error?.message == message)
        }
    }

    @Test func nullIsAValue() throws {
        let patch = try JSONPatch(parse(#"[{"op": "add", "path": "/a", "value": null}]"#))
        #expect(patch == JSONPatch([.add(path: try JSONPointer("/a"), value: .null)]))
    }

    @Test func jsonFormIsTheRFCForm() throws {
        let patch = JSONPatch([
            .add(path: try JSONPointer("/a~1b"), value: [1]),
            .remove(path: .root),
            .replace(path: try JSONPointer("/~0"), value: nil),
            .move(from: try JSONPointer("/x"), path: try JSONPointer("/y")),
            .copy(from: try JSONPointer("/y"), path: try JSONPointer("/z")),
            .test(path: try JSONPointer("/z"), value: "v"),
        ])
        #expect(patch.jsonValue == (try parse(#"""
            [{"op": "add", "path": "/a~1b", "value": [1]},
             {"op": "remove", "path": ""},
             {"op": "replace", "path": "/~0", "value": null},
             {"op": "move", "from": "/x", "path": "/y"},
             {"op": "copy", "from": "/y", "path": "/z"},
             {"op": "test", "path": "/z", "value": "v"}]
            """#)))
        #expect(try JSONPatch(patch.jsonValue) == patch)
    }

    @Test func jsonFormRoundTrips() async {
        await propertyCheck(count: 300, input: JSONTestSupport.pairs) { source, target in
            var patch = JSONPatch(from: source, to: target)
            // Diffs never contain move, copy or test; add them so every kind round-trips.
            for operation in patch.operations.prefix(2) {
                patch.operations.append(.move(from: operation.path, path: operation.path.appending("~/")))
                patch.operations.append(.copy(from: operation.path, path: .root))
                patch.operations.append(.test(path: operation.path, value: target))
            }
            let decoded = try JSONPatch(patch.jsonValue)
            #expect(decoded == patch)
            let reparsed = try JSONPatch(JSONValue(parsing: patch.jsonValue.jsonString))
            #expect(reparsed == patch)
        }
    }
}

/// What each operation overwrote: the old side of `old → new` in `reel show` and the page.
struct JSONPatchOverwrittenValuesTests {
    @Test func eachOldValueIsLookedUpAfterTheOperationsBeforeIt() throws {
        let document = try parse(#"{"hp": 10, "list": ["a", "b"], "gone": null}"#)
        let patch = try JSONPatch(parse(#"""
            [{"op": "replace", "path": "/hp", "value": 4},
             {"op": "add", "path": "/list/0", "value": "z"},
             {"op": "remove", "path": "/list/0"},
             {"op": "remove", "path": "/list/0"},
             {"op": "add", "path": "/hp", "value": 3},
             {"op": "add", "path": "/new", "value": 1},
             {"op": "remove", "path": "/gone"},
             {"op": "move", "from": "/new", "path": "/moved"},
             {"op": "test", "path": "/hp", "value": 3},
             {"op": "remove", "path": "/nothing"},
             {"op": "replace", "path": "/hp", "value": 0}]
            """#))
        // An insert into an array replaces nothing; an add onto a member replaces it; a removed
        // null is a value; from the operation that fails on, nothing is known.
        let expected: [JSONValue?] = [10, nil, "z", "a", 4, nil, JSONValue.null, nil, nil, nil, nil]
        #expect(patch.overwrittenValues(in: document) == expected)
        #expect(JSONPatch([.add(path: .root, value: 1)]).overwrittenValues(in: document) == [document])
    }
}

/// Found by fuzzing: copies share storage, so a document copied into itself again and again costs
/// little memory but doubles its logical size each time, and writing it out never ends.
struct JSONPatchCopyBudgetTests {
    @Test func aPatchThatDoublesTheDocumentIsRefusedAndChangesNothing() throws {
        let original: JSONValue = ["a": 1, "b": ["c": [true]]]
        var document = original
        let doubling = JSONPatch((0..<40).map { .copy(from: try! JSONPointer(""), path: try! JSONPointer("/x\($0)")) })
        do {
            try doubling.apply(to: &document)
            Issue.record("a patch copying 2^40 values was applied")
        } catch {
            #expect(error.code == .invalidPatch)
            #expect(error.message.contains("copies more than \(JSONPatch.maxCopiedValues) values"), "\(error.message)")
        }
        #expect(document == original)
    }

    @Test func copiesWithinTheBudgetApply() throws {
        var document: JSONValue = ["list": .array((0..<1_000).map { .int(Int64($0)) })]
        try JSONPatch([.copy(from: try JSONPointer("/list"), path: try JSONPointer("/again"))]).apply(to: &document)
        #expect(document["again"] == document["list"])
        #expect(JSONValue.array(Array(repeating: 1, count: 10)).valueCount(upTo: 5) == 5)
        #expect(document.valueCount(upTo: .max) == 1 + 2 * 1_001)
    }
}
