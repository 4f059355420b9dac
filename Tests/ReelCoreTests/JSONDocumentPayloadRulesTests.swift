import ReelCore
import ReelJSON
import Testing

/// The stock store's payload checks at dispatch: every payload that cannot be what its type means
/// is refused with the right shape in the message; every payload the reducer's examples show, and
/// every replay, goes through as before.
struct JSONDocumentPayloadRulesTests {
    let rules = JSONDocumentPayloadRules()
    let context = DispatchContext(seq: 1, time: Timestamp(nanosecondsSince1970: 0), peer: .unknown)

    func check(_ type: String, _ payload: JSONValue) throws(ReducerError) {
        let action = Action(type: type, payload: payload)
        let passed = try rules.process(action, state: ["user": ["theme": "light"]], context: context)
        #expect(passed == action, "the rules rewrote \(type)")
    }

    func refusal(_ type: String, _ payload: JSONValue) -> String {
        do {
            try check(type, payload)
            Issue.record("\(type) \(payload) was accepted")
            return ""
        } catch {
            #expect(error.code == .invalidPayload)
            return error.message
        }
    }

    @Test(arguments: [JSONValue.null, "oops", 3, true, [["theme": "dark"]]])
    func mergeRefusesWhatIsNotAnObject(_ payload: JSONValue) {
        let message = refusal("merge", payload)
        #expect(message.contains("merge takes an object"), "\(message)")
        #expect(message.contains(#"use set with the path """#), "the explicit form is named: \(message)")
        #expect(message.contains(#"reel dispatch merge '{"user":{"theme":"dark"}}'"#), "an example: \(message)")
    }

    @Test func mergeRefusesSetsShape() {
        let message = refusal("merge", ["path": "/user", "value": ["theme": "dark"]])
        #expect(message.contains("not {path, value}"), "\(message)")
        #expect(message.contains("use set"), "\(message)")
        // Members named path and value that are not set's shape are merged as they are.
        #expect(throws: Never.self) { try check("merge", ["path": 3, "value": 1]) }
        #expect(throws: Never.self) { try check("merge", ["path": "/a", "value": 1, "other": 2]) }
        #expect(throws: Never.self) { try check("merge", ["path": "relative", "value": 1]) }
    }

    @Test func mutationsRefuseMembersTheyDoNotTake() {
        let increment = refusal("increment", ["path": "/n", "value": 5])
        #expect(increment.hasPrefix("increment does not take 'value'; its payload is {path, by}"), "\(increment)")
        #expect(increment.contains(#"reel dispatch increment '{"by":1,"path":"/visits"}'"#), "\(increment)")
        #expect(refusal("set", ["path": "/a", "valu": 1]).hasPrefix("set does not take 'valu'; its payload is {path, value}"))
        #expect(refusal("remove", ["path": "/a", "value": 1]).hasPrefix("remove does not take 'value'"))
        #expect(refusal("append", ["path": "/a", "values": [1], "x": 1]).hasPrefix("append does not take 'values', 'x'"))
        for type in ["set", "remove", "increment", "append"] {
            #expect(refusal(type, .null).hasPrefix("\(type) takes an object, not null (no payload)"))
            #expect(refusal(type, [1]).hasPrefix("\(type) takes an object, not an array"))
        }
        #expect(refusal("patch", ["op": "add", "path": "/a", "value": 1]).hasPrefix("patch takes an array of RFC 6902 operations, not an object"))
    }

    @Test func everyExamplePassesAndOtherTypesAreLeftAlone() throws {
        for description in JSONDocumentReducer().actionDescriptions {
            try check(description.type, description.example)
        }
        try check("increment", ["path": "/n"])
        try check("set", ["path": "", "value": "the whole state"])
        try check("custom", .null)
    }

    /// Replacing the whole state is `set` with the path `""`, which the reducer carries out.
    @Test func setAtTheRootReplacesTheWholeState() throws {
        var state: JSONValue = ["a": 1]
        let action = ActionEnvelope(
            seq: 1, action: Action(type: "set", payload: ["path": "", "value": "text"]),
            time: Timestamp(nanosecondsSince1970: 0), peer: .unknown
        )
        try JSONDocumentReducer().reduce(into: &state, action: action)
        #expect(state == "text")
    }

    /// The stock store runs the rules at dispatch (and so only at dispatch: replay runs reducers).
    @Test func theStockStoreRunsThem() {
        let stock = StoreDefinition<JSONValue>.stock
        #expect(throws: ReducerError.self) {
            _ = try stock.runMiddleware(Action(type: "merge", payload: .null), state: [:], context: context)
        }
    }
}
