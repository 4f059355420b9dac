import PropertyBased
import Testing

@testable import ReelJSON

private func parse(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

@Suite struct JSONDiffTests {
    /// Diffs `source` to `target`, checks that the patch works, and returns its JSON text.
    private func diff(_ source: String, _ target: String) throws -> JSONValue {
        let before = try parse(source), after = try parse(target)
        let patch = JSONPatch(from: before, to: after)
        var patched = before
        try patch.apply(to: &patched)
        #expect(patched == after)
        return patch.jsonValue
    }

    @Test func equalValuesGiveNoOperation() throws {
        #expect(try diff(#"{"a": [1, {"b": null}]}"#, #"{"a": [1, {"b": null}]}"#) == [])
        #expect(try diff("1", "1.0") == [])
        #expect(try diff("[]", "[]") == [])
    }

    @Test func scalarsAndTypeChangesAreReplaced() throws {
        #expect(try diff("1", "2") == (try parse(#"[{"op": "replace", "path": "", "value": 2}]"#)))
        #expect(try diff(#"{"a": [1]}"#, #"{"a": {"0": 1}}"#)
            == (try parse(#"[{"op": "replace", "path": "/a", "value": {"0": 1}}]"#)))
        #expect(try diff(#"{"a": null}"#, #"{"a": false}"#)
            == (try parse(#"[{"op": "replace", "path": "/a", "value": false}]"#)))
    }

    @Test func objectMembersInKeyOrder() throws {
        let patch = try diff(
            #"{"z": 1, "b": {"x": 1, "y": 2}, "a": 0, "same": [1]}"#,
            #"{"c": 3, "b": {"x": 1, "y": 3}, "a": 0, "same": [1], "A": true}"#)
        #expect(patch == (try parse(#"""
            [{"op": "add", "path": "/A", "value": true},
             {"op": "replace", "path": "/b/y", "value": 3},
             {"op": "add", "path": "/c", "value": 3},
             {"op": "remove", "path": "/z"}]
            """#)))
    }

    @Test func awkwardKeysAreEscaped() throws {
        let patch = try diff(#"{"a/b": 1, "~": 2, "": 3}"#, #"{"a/b": 2, "~1": 2, "": {"/": 3}}"#)
        #expect(patch == (try parse(#"""
            [{"op": "replace", "path": "/", "value": {"/": 3}},
             {"op": "replace", "path": "/a~1b", "value": 2},
             {"op": "remove", "path": "/~0"},
             {"op": "add", "path": "/~01", "value": 2}]
            """#)))
    }

    @Test func arraysKeepCommonEnds() throws {
        #expect(try diff("[1, 2, 3]", "[1, 3]") == (try parse(#"[{"op": "remove", "path": "/1"}]"#)))
        #expect(try diff("[1, 2, 3]", "[1, 4, 3]") == (try parse(#"[{"op": "replace", "path": "/1", "value": 4}]"#)))
        #expect(try diff("[1, 2]", "[1, 2, 3, 4]") == (try parse(#"""
            [{"op": "add", "path": "/2", "value": 3}, {"op": "add", "path": "/3", "value": 4}]
            """#)))
        #expect(try diff("[0, 1]", "[0, 5, 6, 1]") == (try parse(#"""
            [{"op": "add", "path": "/1", "value": 5}, {"op": "add", "path": "/2", "value": 6}]
            """#)))
        #expect(try diff("[{\"k\": 1}, 9]", "[{\"k\": 2}, 9]")
            == (try parse(#"[{"op": "replace", "path": "/0/k", "value": 2}]"#)))
    }

    @Test func extraElementsAreRemovedFromTheHighestIndexDown() throws {
        #expect(try diff("[1, 2, 3, 4]", "[1]") == (try parse(#"""
            [{"op": "remove", "path": "/3"}, {"op": "remove", "path": "/2"}, {"op": "remove", "path": "/1"}]
            """#)))
        #expect(try diff("[0, 1, 2, 3, 9]", "[0, 7, 9]") == (try parse(#"""
            [{"op": "replace", "path": "/1", "value": 7},
             {"op": "remove", "path": "/3"}, {"op": "remove", "path": "/2"}]
            """#)))
    }

    @Test func prefixedPatchesApplyToTheWholeDocument() throws {
        var document = try parse(#"{"users": {"a/b": {"tags": ["x"], "n": 1}}, "other": 0}"#)
        let slice = try JSONPointer("/users/a~1b")
        let before = try #require(document.value(at: slice))
        let after = try parse(#"{"tags": ["x", "y"], "m": 2}"#)
        let patch = JSONPatch(from: before, to: after).prefixed(with: slice)
        #expect(patch.jsonValue == (try parse(#"""
            [{"op": "add", "path": "/users/a~1b/m", "value": 2},
             {"op": "remove", "path": "/users/a~1b/n"},
             {"op": "add", "path": "/users/a~1b/tags/1", "value": "y"}]
            """#)))
        try patch.apply(to: &document)
        #expect(document == (try parse(#"{"users": {"a/b": {"tags": ["x", "y"], "m": 2}}, "other": 0}"#)))

        let moves = JSONPatch([.move(from: try JSONPointer("/a"), path: .root), .copy(from: .root, path: try JSONPointer("/b"))])
        #expect(moves.prefixed(with: try JSONPointer("/p")).jsonValue == (try parse(#"""
            [{"op": "move", "from": "/p/a", "path": "/p"}, {"op": "copy", "from": "/p", "path": "/p/b"}]
            """#)))
        #expect(moves.prefixed(with: .root) == moves)
    }

    @Test func applyingTheDiffGivesTheTarget() async {
        await propertyCheck(count: 500, input: JSONTestSupport.pairs) { source, target in
            let patch = JSONPatch(from: source, to: target)
            var document = source
            #expect(throws: Never.self) { try patch.apply(to: &document) }
            #expect(document == target, "patch \(patch.jsonValue)")
            #expect(JSONPatch(from: target, to: target).operations.isEmpty)
        }
    }

    @Test func diffsOfSmallEditsStaySmall() async {
        // A value diffed against itself with one leaf changed gives exactly one replace.
        await propertyCheck(count: 300, input: JSONTestSupport.pairs) { source, _ in
            guard let (pointer, leaf) = JSONTestSupport.firstLeaf(of: source, at: .root), !pointer.isRoot else { return }
            var target = source
            let replacement: JSONValue = leaf == "changed" ? "other" : "changed"
            #expect(throws: Never.self) { try target.replace(at: pointer, with: replacement) }
            #expect(JSONPatch(from: source, to: target) == JSONPatch([.replace(path: pointer, value: replacement)]))
        }
    }
}

/// Random JSON documents for property tests, and a stricter equality than `==`.
enum JSONTestSupport {
    /// Keys that stress pointer escaping and array-index look-alikes.
    static let keys = ["a", "b", "a/b", "~", "~0", "~1", "/", "", " ", "0", "01", "-", "é"]
    static let strings = ["", "x", "a/b", "~", "1", "ключ"]

    static func randomValue(_ rng: inout some RandomNumberGenerator, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 10 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: -2...2, using: &rng))
        case 3: return .double([0.5, -1.25, 1.0, 2.0, -0.0, 1e300].randomElement(using: &rng)!)
        case 4, 5: return .string(strings.randomElement(using: &rng)!)
        case 6, 7:
            return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(&rng, depth: depth - 1) })
        default:
            var members: JSONObject = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                members[keys.randomElement(using: &rng)!] = randomValue(&rng, depth: depth - 1)
            }
            return .object(members)
        }
    }

    /// `value` with a few random edits, so that diffs recurse instead of replacing everything.
    static func mutated(_ value: JSONValue, _ rng: inout some RandomNumberGenerator, depth: Int) -> JSONValue {
        if Int.random(in: 0..<8, using: &rng) == 0 { return randomValue(&rng, depth: depth) }
        switch value {
        case .object(var members):
            for key in members.keys {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: members[key] = nil
                case 1, 2: members[key] = mutated(members[key]!, &rng, depth: depth - 1)
                default: break
                }
            }
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                members[keys.randomElement(using: &rng)!] = randomValue(&rng, depth: depth - 1)
            }
            return .object(members)
        case .array(var elements):
            for index in elements.indices.reversed() {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: elements.remove(at: index)
                case 1, 2: elements[index] = mutated(elements[index], &rng, depth: depth - 1)
                default: break
                }
            }
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                elements.insert(randomValue(&rng, depth: depth - 1), at: Int.random(in: 0...elements.count, using: &rng))
            }
            return .array(elements)
        default:
            return Bool.random(using: &rng) ? value : randomValue(&rng, depth: 0)
        }
    }

    /// Pairs of documents: half unrelated, half a document and an edited copy.
    static let pairs = Generator<(JSONValue, JSONValue), Shrink.None<(JSONValue, JSONValue)>> { rng in
        let source = randomValue(&rng, depth: 4)
        let target = Bool.random(using: &rng) ? mutated(source, &rng, depth: 4) : randomValue(&rng, depth: 4)
        return (source, target)
    }

    /// The first scalar in `value` (depth first, objects in key order), with its pointer.
    static func firstLeaf(of value: JSONValue, at pointer: JSONPointer) -> (JSONPointer, JSONValue)? {
        switch value {
        case .object(let members):
            for key in members.keys.sorted() {
                if let leaf = firstLeaf(of: members[key]!, at: pointer.appending(key)) { return leaf }
            }
            return nil
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let leaf = firstLeaf(of: element, at: pointer.appending(String(index))) { return leaf }
            }
            return nil
        default:
            return (pointer, value)
        }
    }

    /// Equality that also tells `1` from `1.0` and `0.0` from `-0.0`: "exactly as before".
    static func isIdentical(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a.count == b.count && zip(a, b).allSatisfy { isIdentical($0, $1) }
        case let (.object(a), .object(b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map { isIdentical(value, $0) } ?? false }
        default: false
        }
    }
}
