import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// `dispatch` params: both forms, the guards, and every way they can be wrong.
struct DispatchParamsTests {
    let read = DispatchParams.init(params:)

    // MARK: Accepted

    @Test func readsOneAction() throws {
        let params = try DispatchParams(params: ["action": ["type": "set", "payload": ["path": "/a", "value": 1]]])
        #expect(params.actions == [Action(type: "set", payload: ["path": "/a", "value": 1])])
        #expect(params.isBatch == false)
        #expect(params.expectedSeq == nil)
        #expect(params.idempotencyKey == nil)
    }

    @Test func anAbsentOrNullPayloadIsNull() throws {
        #expect(try DispatchParams(params: ["action": ["type": "reset"]]).actions == [Action(type: "reset", payload: .null)])
        #expect(try DispatchParams(params: ["action": ["type": "reset", "payload": nil]]).actions == [Action(type: "reset")])
    }

    @Test func readsABatchInOrder() throws {
        let params = try DispatchParams(params: ["actions": [
            ["type": "increment", "payload": ["path": "/n"]], ["type": "append", "payload": ["path": "/l", "value": 2]], ["type": "x"],
        ]])
        #expect(params.actions.map(\.type) == ["increment", "append", "x"])
        #expect(params.actions[1].payload == ["path": "/l", "value": 2])
        #expect(params.isBatch == true)
    }

    @Test func aBatchOfOneIsStillABatch() throws {
        #expect(try DispatchParams(params: ["actions": [["type": "x"]]]).isBatch == true)
    }

    @Test func reservedTypesPassThroughForTheStoreToJudge() throws {
        #expect(try DispatchParams(params: ["action": ["type": "@revert", "payload": ["to": 3]]]).actions[0].isReserved)
    }

    @Test func readsTheGuards() throws {
        let params = try DispatchParams(params: ["action": ["type": "x"], "expectedSeq": 41, "idempotencyKey": "c7-0012"])
        #expect(params.expectedSeq == 41)
        #expect(params.idempotencyKey == "c7-0012")
        #expect(try DispatchParams(params: ["action": ["type": "x"], "expectedSeq": 0]).expectedSeq == 0)
        #expect(try DispatchParams(params: ["action": ["type": "x"], "expectedSeq": 5.0]).expectedSeq == 5)
    }

    @Test func nullMembersCountAsAbsent() throws {
        let params = try DispatchParams(params: [
            "action": nil, "actions": [["type": "x"]], "expectedSeq": nil, "idempotencyKey": nil,
        ])
        #expect(params.isBatch == true)
        #expect(params.expectedSeq == nil)
        #expect(params.idempotencyKey == nil)
    }

    @Test func idempotencyKeyLengthIsCountedInUTF8Bytes() throws {
        let longest = String(repeating: "é", count: 128)  // 256 bytes
        #expect(try DispatchParams(params: ["action": ["type": "x"], "idempotencyKey": .string(longest)]).idempotencyKey == longest)
        #expect(invalidParams(["action": ["type": "x"], "idempotencyKey": .string(longest + "a")], read)
            == "params.idempotencyKey is 257 bytes long; the limit is 256 (use an id such as a UUID)")
    }

    // MARK: Refused

    @Test func needsExactlyOneForm() {
        #expect(invalidParams(nil, read)
            == #"dispatch needs either 'action' (one action) or 'actions' (an atomic batch), such as {"action": {"type": "set", "payload": …}}"#)
        #expect(invalidParams([:], read) == invalidParams(nil, read))
        #expect(invalidParams(["action": ["type": "x"], "actions": [["type": "y"]]], read)
            == "dispatch needs either 'action' or 'actions', not both")
    }

    @Test func refusesPositionalParams() {
        #expect(invalidParams([["type": "x"]], read)
            == "dispatch takes named params (an object), not an array; positional params are not supported")
    }

    @Test func refusesUnknownParams() {
        #expect(invalidParams(["action": ["type": "x"], "expectedseq": 3], read)
            == #"dispatch has no param "expectedseq" (it takes action, actions, expectedSeq, idempotencyKey, meta, branch)"#)
    }

    @Test(arguments: [
        (-1, "-1"), (1.5, "1.5"), ("5", #"the string "5""#), (true, "true"), ([1], "an array"), (1e19, "1e+19"),
    ] as [(JSONValue, String)])
    func expectedSeqMustBeANonNegativeInteger(value: JSONValue, described: String) {
        #expect(invalidParams(["action": ["type": "x"], "expectedSeq": value], read)
            == "params.expectedSeq must be a non-negative integer (a seq), not \(described)")
    }

    @Test func idempotencyKeyMustBeANonEmptyString() {
        #expect(invalidParams(["action": ["type": "x"], "idempotencyKey": ""], read)
            == "params.idempotencyKey must not be empty (omit it to dispatch without one)")
        #expect(invalidParams(["action": ["type": "x"], "idempotencyKey": 12], read)
            == "params.idempotencyKey must be a string, not 12")
    }

    @Test func anActionMustBeAnObjectWithAType() {
        #expect(invalidParams(["action": "set"], read)
            == #"params.action must be an action object {"type": …, "payload": …}, not the string "set""#)
        #expect(invalidParams(["action": ["payload": 1]], read)
            == #"params.action.type is missing (the action type, such as "set")"#)
        #expect(invalidParams(["action": ["type": ""]], read)
            == #"params.action.type must be a non-empty string, not the string """#)
        #expect(invalidParams(["action": ["type": 3]], read)
            == "params.action.type must be a non-empty string, not 3")
        #expect(invalidParams(["action": ["type": "x", "paylod": 1]], read)
            == #"params.action has an unknown member "paylod" (an action has type, payload and version)"#)
    }

    @Test func aBatchMustBeANonEmptyArrayOfActions() {
        #expect(invalidParams(["actions": ["type": "x"]], read)
            == "params.actions must be an array of actions, not an object")
        #expect(invalidParams(["actions": []], read) == "params.actions must hold at least one action")
        #expect(invalidParams(["actions": [["type": "x"], ["type": "y"], 7]], read)
            == #"params.actions[2] must be an action object {"type": …, "payload": …}, not 7"#)
        #expect(invalidParams(["actions": [["type": "x"], [:]]], read)
            == #"params.actions[1].type is missing (the action type, such as "set")"#)
    }

    @Test func anOversizedBatchIsTooLarge() throws {
        let action: JSONValue = ["type": "x"]
        let largest = try DispatchParams(params: ["actions": .array(Array(repeating: action, count: DispatchParams.maxBatchSize))])
        #expect(largest.actions.count == 10_000)
        let error = #expect(throws: RPCError.self) {
            try DispatchParams(params: ["actions": .array(Array(repeating: action, count: 10_001))])
        }
        #expect(error == RPCError(
            code: 1007, message: "a batch may hold at most 10000 actions, not 10001; split it into several dispatches",
            data: ["limit": 10_000]))
    }

    // MARK: Client side

    @Test(arguments: [
        DispatchParams(action: Action(type: "set", payload: ["path": "/a", "value": [1, nil]])),
        DispatchParams(action: Action(type: "reset"), expectedSeq: 0, idempotencyKey: "k"),
        DispatchParams(batch: [Action(type: "a"), Action(type: "b", payload: 2)], expectedSeq: 9),
        DispatchParams(batch: [Action(type: "a")]),
    ])
    func clientParamsReadBack(params: DispatchParams) throws {
        #expect(try DispatchParams(params: params.jsonValue) == params)
    }

    @Test func clientParamsHaveTheSpecShape() {
        #expect(DispatchParams(action: Action(type: "reset"), expectedSeq: 3).jsonValue.jsonString
            == #"{"action":{"type":"reset"},"expectedSeq":3}"#)
        #expect(DispatchParams(batch: [Action(type: "a", payload: 1)], idempotencyKey: "k").jsonValue.jsonString
            == #"{"actions":[{"payload":1,"type":"a"}],"idempotencyKey":"k"}"#)
    }
}
