import ReelCore
import ReelJSON
import Testing

/// Typed reducers: `On`, `Scope`, `CombineReducers`, middleware.
struct ReducerCompositionTests {
    struct Counter: StoreState {
        var left = 0
        var right = 0
        var log: [String] = []
    }

    struct Bump: ActionPayload {
        static let actionType = "bump"
        var by: Int
    }

    struct Note: ActionPayload {
        static let actionType = "note"
        var text: String
    }

    func envelope(_ action: Action, seq: UInt64 = 1) -> ActionEnvelope {
        ActionEnvelope(seq: seq, action: action, time: Timestamp(nanosecondsSince1970: 5), peer: .unknown)
    }

    @Test func scopedReducersSeeOnlyTheirSlice() throws {
        let reducer = CombineReducers<Counter> {
            Scope(\Counter.left) {
                On(Bump.self) { value, bump throws(ReducerError) in value += bump.by }
            }
            Scope(\Counter.log) {
                On(Note.self) { log, note throws(ReducerError) in log.append(note.text) }
            }
        }
        #expect(reducer.actionTypes == ["bump", "note"])
        var state = Counter()
        try reducer.reduce(into: &state, action: envelope(try Action(Bump(by: 3))))
        try reducer.reduce(into: &state, action: envelope(try Action(Note(text: "hi"))))
        #expect(state == Counter(left: 3, right: 0, log: ["hi"]))
    }

    @Test func aRefusalByOneOfSeveralHandlersUndoesTheOthers() {
        let reducer = CombineReducers<Counter> {
            On(Bump.self) { state, bump throws(ReducerError) in state.left += bump.by }
            On(Bump.self) { state, bump throws(ReducerError) in
                guard bump.by < 10 else { throw .rejected("too big") }
                state.right += bump.by
            }
        }
        var state = Counter()
        #expect(throws: ReducerError.rejected("too big")) {
            try reducer.reduce(into: &state, action: envelope(try Action(Bump(by: 50))))
        }
        #expect(state == Counter())
    }

    @Test func badPayloadsNameTheField() {
        let reducer = On<Counter, Bump>(Bump.self) { state, bump throws(ReducerError) in state.left += bump.by }
        var state = Counter()
        do {
            try reducer.reduce(into: &state, action: envelope(Action(type: "bump", payload: ["by": "three"])))
            Issue.record("accepted a string as Int")
        } catch {
            #expect(error.code == .invalidPayload)
            #expect(error.message.contains("by"))
        }
    }

    @Test func middlewareRewritesWhatGetsLogged() throws {
        let definition = StoreDefinition(
            name: "counter", version: "1", initialState: Counter(),
            middleware: [
                Enrich(Note.self) { note, state, context throws(ReducerError) in
                    Note(text: "\(note.text) @\(context.seq) left=\(state.left)")
                },
                MiddlewareFunction { action, _, _ throws(ReducerError) in
                    guard action.type != "bump" || action.payload["by"]?.intValue != 0 else {
                        throw .rejected("bumping by zero is pointless")
                    }
                    return action
                },
            ],
            reducer: On(Note.self) { state, note throws(ReducerError) in state.log.append(note.text) }
        )
        let context = DispatchContext(seq: 7, time: Timestamp(nanosecondsSince1970: 0), peer: .unknown)
        let processed = try definition.runMiddleware(try Action(Note(text: "hi")), state: Counter(left: 2), context: context)
        // A typed payload names its version (the store logs it as `nil` when it is 1).
        #expect(processed == Action(type: "note", payload: ["text": "hi @7 left=2"], version: 1))
        #expect(throws: ReducerError.rejected("bumping by zero is pointless")) {
            try definition.runMiddleware(Action(type: "bump", payload: ["by": 0]), state: Counter(), context: context)
        }
    }

    @Test func typedStateRoundTripsThroughJSON() throws {
        let state = Counter(left: 1, right: 2, log: ["a"])
        let json = try state.jsonValue()
        #expect(json == ["left": 1, "right": 2, "log": ["a"]])
        #expect(try Counter(jsonValue: json) == state)
    }
}

/// Which action types a definition knows at dispatch (`checkKnown`): few types are compared by
/// name, many looked up in a set; both follow a replaced reducer.
@Suite struct KnownActionTypesTests {
    static func reducer(_ types: [String]) -> Reduce<JSONValue> {
        Reduce(Set(types)) { _, _ in }
    }

    @Test(arguments: [3, 16, 17, 40])
    func knowsExactlyItsReducersTypes(count: Int) {
        let types = (0..<count).map { "t\($0)" }
        var definition = StoreDefinition(name: "test", version: "1", initialState: JSONValue.object([:]), reducer: Self.reducer(types))
        for type in types { #expect(throws: Never.self) { try definition.checkKnown(Action(type: type)) } }
        #expect(throws: ReducerError.self) { try definition.checkKnown(Action(type: "t\(count)")) }
        #expect(throws: ReducerError.self) { try definition.checkKnown(Action(type: "")) }
        #expect(throws: Never.self) { try definition.checkKnown(Action(type: "@revert", payload: ["to": 1])) }

        // Another reducer: its types, not the old ones.
        definition.reducer = Self.reducer(["other"] + (0..<(count / 2)).map { "u\($0)" })
        #expect(throws: Never.self) { try definition.checkKnown(Action(type: "other")) }
        #expect(throws: ReducerError.self) { try definition.checkKnown(Action(type: "t0")) }
    }
}
