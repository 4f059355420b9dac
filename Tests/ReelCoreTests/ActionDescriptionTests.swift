import ReelCore
import ReelJSON
import Testing

/// What reducers say each action type accepts (`describe`): the stock reducer's rules, typed
/// payloads' declarations, and how composed reducers gather them.
struct ActionDescriptionTests {
    struct Counter: StoreState {
        var count = 0
    }

    struct Bump: ActionPayload {
        static let actionType = "bump"
        static let payloadSchema = JSONSchema.object(["by": JSONSchema.integer], required: ["by"], description: "Adds by.")
        static let example: Bump? = Bump(by: 2)
        var by: Int
    }

    struct Reset: ActionPayload {
        static let actionType = "reset"
    }

    func envelope(_ action: Action, seq: UInt64) -> ActionEnvelope {
        ActionEnvelope(seq: seq, action: action, time: Timestamp(nanosecondsSince1970: 0), peer: .unknown)
    }

    @Test func theStockReducerDescribesEveryTypeAndEveryExampleIsAccepted() throws {
        let reducer = JSONDocumentReducer()
        let descriptions = reducer.actionDescriptions
        #expect(descriptions.map(\.type) == reducer.actionTypes.sorted())
        var state = StoreDefinition.stock.initialState
        for (index, description) in descriptions.enumerated() {
            #expect(description.version == 1)
            #expect(description.summary?.isEmpty == false, "\(description.type) says nothing of what it does")
            #expect(description.schema["type"] != nil, "\(description.type) has no payload type")
            try reducer.reduce(into: &state, action: envelope(Action(type: description.type, payload: description.example), seq: UInt64(index + 1)))
        }
        #expect(state == ["todos": ["Water the plants"], "visits": 1, "user": ["name": "Grace"]])
    }

    @Test func theStoreDescribesItsOwnActionsAfterTheReducers() {
        let types = StoreDefinition.stock.actionDescriptions.map(\.type)
        #expect(types == ["append", "increment", "merge", "patch", "remove", "set", "@revert"])
    }

    @Test func typedPayloadsDescribeThemselvesAndComposedReducersGatherThem() {
        let reducer = CombineReducers<Counter> {
            On(Bump.self) { state, bump throws(ReducerError) in state.count += bump.by }
            Scope(\Counter.count) {
                On(Reset.self) { count, _ throws(ReducerError) in count = 0 }
            }
            Reduce<Counter>(["halve", "double"], describedBy: [
                ActionDescription(type: "double", schema: JSONSchema.any, example: .null)
            ]) { state, _ throws(ReducerError) in state.count *= 2 }
        }
        let described = reducer.actionDescriptions
        #expect(described.map(\.type) == ["bump", "double", "halve", "reset"])
        #expect(described[0] == ActionDescription(
            type: "bump", schema: ["type": "object", "properties": ["by": ["type": "integer"]], "required": ["by"], "description": "Adds by."],
            example: ["by": 2]
        ))
        #expect(described[0].summary == "Adds by.")
        // Undeclared: any object, no example, and a description that says so.
        #expect(described[3].example == .null && described[3].schema["type"] == "object")
        #expect(described[3].summary?.contains("declares none") == true)
        #expect(described[2] == .undescribed("halve"))
    }
}
