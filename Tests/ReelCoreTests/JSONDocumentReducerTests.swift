import ReelCore
import ReelJSON
import Testing

/// The stock reducer (docs/REFERENCE.md), action by action, including every refusal leaving the state as it was.
struct JSONDocumentReducerTests {
    let reducer = JSONDocumentReducer()

    func envelope(_ type: String, _ payload: JSONValue, seq: UInt64 = 1) -> ActionEnvelope {
        ActionEnvelope(
            seq: seq, action: Action(type: type, payload: payload),
            time: Timestamp(nanosecondsSince1970: 0), peer: .unknown
        )
    }

    func apply(_ type: String, _ payload: JSONValue, to state: JSONValue) throws(ReducerError) -> JSONValue {
        var state = state
        try reducer.reduce(into: &state, action: envelope(type, payload))
        return state
    }

    /// Applies an action that must be refused, and checks the state did not change.
    func refused(_ type: String, _ payload: JSONValue, on state: JSONValue) -> ReducerError? {
        var copy = state
        do {
            try reducer.reduce(into: &copy, action: envelope(type, payload))
            Issue.record("\(type) \(payload) was accepted")
            return nil
        } catch {
            #expect(copy == state, "a refused \(type) changed the state")
            return error
        }
    }

    /// `set` of a root object's member takes a shortcut (no JSON Pointer made): it must give what
    /// the pointer's walk gives, for every kind of name, and leave every other path to the walk.
    @Test(arguments: ["/a", "/new", "/", "/0", "/-", "/é😀", "/a~1b", "/a~0b", "/a/b", "/list/0", "/list/-", ""])
    func settingARootMemberMatchesThePointersWalk(_ path: String) throws {
        let states: [JSONValue] = [["a": 1, "a/b": 2, "a~b": 3, "list": [1, 2], "": 4, "0": 5, "a": ["b": 6]], [:], [1, 2], "text"]
        for state in states {
            let value: JSONValue = ["set": true]
            var walked = state
            let expected: Result<JSONValue, JSONError> = Result { () throws(JSONError) in
                let pointer = try JSONPointer(path)
                if walked.value(at: pointer) != nil, pointer.lastToken.map({ Int($0) != nil || $0 == "-" }) ?? true {
                    try walked.replace(at: pointer, with: value)
                } else {
                    try walked.add(value, at: pointer)
                }
                return walked
            }
            switch expected {
            case .success(let result):
                #expect(try apply("set", ["path": .string(path), "value": value], to: state) == result, "\(path) on \(state)")
            case .failure:
                #expect(refused("set", ["path": .string(path), "value": value], on: state) != nil, "\(path) on \(state)")
            }
        }
    }

    @Test func patchAppliesAllOperations() throws {
        let state: JSONValue = ["a": 1, "list": [1, 2]]
        let result = try apply("patch", [
            ["op": "replace", "path": "/a", "value": 2],
            ["op": "add", "path": "/list/-", "value": 3],
            ["op": "add", "path": "/b", "value": ["c": true]],
        ], to: state)
        #expect(result == ["a": 2, "list": [1, 2, 3], "b": ["c": true]])
    }

    @Test func patchIsAtomic() {
        let state: JSONValue = ["a": 1, "list": [1, 2]]
        let error = refused("patch", [
            ["op": "replace", "path": "/a", "value": 2],
            ["op": "remove", "path": "/list/0"],
            ["op": "test", "path": "/a", "value": 99],
        ], on: state)
        #expect(error?.code == .rejected)
    }

    @Test func mergeFollowsRFC7396() throws {
        let state: JSONValue = ["a": "b", "c": ["d": "e", "f": "g"]]
        let result = try apply("merge", ["a": "z", "c": ["f": nil]], to: state)
        #expect(result == ["a": "z", "c": ["d": "e"]])
    }

    @Test func setReplacesAddsAndAppends() throws {
        var state: JSONValue = ["user": ["name": "ada"], "tags": ["x"]]
        state = try apply("set", ["path": "/user/name", "value": "grace"], to: state)
        state = try apply("set", ["path": "/user/age", "value": 36], to: state)
        state = try apply("set", ["path": "/tags/-", "value": "y"], to: state)
        state = try apply("set", ["path": "/tags/0", "value": "w"], to: state)
        #expect(state == ["user": ["name": "grace", "age": 36], "tags": ["w", "y"]])
        // Member names that look like array indexes are members all the same in an object.
        state = try apply("set", ["path": "/user/2024", "value": 1], to: state)
        state = try apply("set", ["path": "/user/2024", "value": 2], to: state)
        state = try apply("set", ["path": "/user/", "value": "empty key"], to: state)
        #expect(state["user"] == ["name": "grace", "age": 36, "2024": 2, "": "empty key"])
        state = try apply("set", ["path": "", "value": ["fresh": true]], to: state)
        #expect(state == ["fresh": true])
    }

    @Test func setRefusesANameInAnArrayAndAChildOfAScalar() {
        let state: JSONValue = ["tags": ["x"], "n": 1]
        #expect(refused("set", ["path": "/tags/first", "value": 1], on: state)?.code == .rejected)
        #expect(refused("set", ["path": "/tags/5", "value": 1], on: state)?.code == .rejected)
        #expect(refused("set", ["path": "/n/child", "value": 1], on: state)?.code == .rejected)
    }

    @Test func setNeedsAnExistingParent() {
        let error = refused("set", ["path": "/missing/child", "value": 1], on: ["a": 1])
        #expect(error?.code == .rejected)
        #expect(error?.message.contains("missing") == true)
    }

    @Test func removeNeedsAnExistingTarget() throws {
        #expect(try apply("remove", ["path": "/a"], to: ["a": 1, "b": 2]) == ["b": 2])
        #expect(refused("remove", ["path": "/zzz"], on: ["a": 1])?.code == .rejected)
    }

    @Test func incrementAddsIntegersAndDoubles() throws {
        var state: JSONValue = ["n": 1, "x": 0.5]
        state = try apply("increment", ["path": "/n"], to: state)
        state = try apply("increment", ["path": "/n", "by": 10], to: state)
        state = try apply("increment", ["path": "/x", "by": 1], to: state)
        state = try apply("increment", ["path": "/fresh", "by": -3], to: state)
        #expect(state == ["n": 12, "x": 1.5, "fresh": -3])
        #expect(state["n"] == .int(12))
    }

    @Test func incrementRefusesNonNumbersAndOverflow() {
        #expect(refused("increment", ["path": "/s"], on: ["s": "text"])?.code == .rejected)
        #expect(refused("increment", ["path": "/n", "by": "1"], on: ["n": 1])?.code == .invalidPayload)
        #expect(refused("increment", ["path": "/n"], on: ["n": .int(.max)])?.code == .rejected)
    }

    @Test func appendToArrays() throws {
        var state: JSONValue = ["list": [1]]
        state = try apply("append", ["path": "/list", "value": ["k": 2]], to: state)
        state = try apply("append", ["path": "/new", "value": "first"], to: state)
        #expect(state == ["list": [1, ["k": 2]], "new": ["first"]])
        #expect(refused("append", ["path": "/list/0", "value": 1], on: state)?.code == .rejected)
    }

    @Test func malformedPayloadsAreInvalid() {
        let state: JSONValue = ["a": 1]
        #expect(refused("set", ["value": 1], on: state)?.code == .invalidPayload)
        #expect(refused("set", ["path": 3, "value": 1], on: state)?.code == .invalidPayload)
        #expect(refused("set", ["path": "no-slash", "value": 1], on: state)?.code == .invalidPayload)
        #expect(refused("remove", "just a string", on: state)?.code == .invalidPayload)
        #expect(refused("patch", ["not": "an array"], on: state) != nil)
    }

    @Test func definitionRefusesUnknownTypes() {
        let definition = StoreDefinition<JSONValue>.stock
        #expect(throws: ReducerError(.unknownActionType, "unknown action type 'frobnicate' (known: append, increment, merge, patch, remove, set)")) {
            try definition.checkKnown(Action(type: "frobnicate"))
        }
        #expect(throws: Never.self) { try definition.checkKnown(Action(type: "@revert", payload: ["to": 0])) }
    }

    @Test func revertPayloadIsChecked() throws {
        #expect(try StoreAction(Action(type: "@revert", payload: ["to": 3])) == .revert(to: 3))
        #expect(try StoreAction(Action(type: "set")) == nil)
        #expect(throws: ReducerError.self) { try StoreAction(Action(type: "@revert", payload: ["to": -1])) }
        #expect(throws: ReducerError.self) { try StoreAction(Action(type: "@frobnicate")) }
    }
}
