import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// From a request line to a typed call, as the server does it, and back, as a client does it.
struct RPCCallTests {
    func call(_ line: String) throws -> RPCCall {
        try RPCCall(try RPCRequest.parse(line).get())
    }

    @Test func everyMethodOfTheSpecIsKnownAndTheAdditionsFollow() {
        #expect(Method.all.map { $0.name.rawValue }
            == ["hello", "dispatch", "get", "subscribe", "unsubscribe", "history", "diff", "replay", "stats", "checkpoints", "verify", "backup", "bisect", "scan", "digest", "describe", "find", "blame", "handOver", "takeOverProgress", "branchCreate", "branches", "branchDelete"])
    }

    @Test func linesBecomeTypedCalls() throws {
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"hello","params":{"protocol":1}}"#)
            == RPCCall(Method.Hello.self, HelloParams(protocolVersion: 1)))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/a","value":1}},"expectedSeq":0}}"#)
            == RPCCall(Method.Dispatch.self, DispatchParams(action: Action(type: "set", payload: ["path": "/a", "value": 1]), expectedSeq: 0)))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"get"}"#) == RPCCall(Method.Get.self, GetParams()))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"mode":"actions","since":3}}"#)
            == RPCCall(Method.Subscribe.self, SubscribeParams(since: 3, mode: .actions)))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"unsubscribe","params":{"subscription":"s1"}}"#)
            == RPCCall(Method.Unsubscribe.self, UnsubscribeParams(subscription: "s1")))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"history","params":{"types":["set"]}}"#)
            == RPCCall(Method.History.self, HistoryParams(types: ["set"])))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"diff","params":{"from":1,"to":2}}"#)
            == RPCCall(Method.Diff.self, DiffParams(from: 1, to: 2)))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"replay","params":{"skip":[2]}}"#)
            == RPCCall(Method.Replay.self, ReplayParams(skip: [2])))
        #expect(try call(#"{"jsonrpc":"2.0","id":1,"method":"stats","params":{}}"#) == RPCCall(Method.Stats.self, StatsParams()))
    }

    @Test(arguments: ["dispach", "Hello", "update", "rpc.discover", ""])
    func anUnknownMethodIsNotFound(method: String) {
        let error = #expect(throws: RPCError.self) { try RPCCall(method: method, params: nil) }
        #expect(error?.code == -32601)
        #expect(error?.message == "unknown method \(JSONValue.string(method).jsonString); protocol 1 has: hello, dispatch, get, subscribe, unsubscribe, history, diff, replay, stats, checkpoints, verify, backup, bisect, scan, digest, describe, find, blame, handOver, takeOverProgress, branchCreate, branches, branchDelete")
    }

    @Test func paramErrorsComeThrough() {
        let error = #expect(throws: RPCError.self) { try call(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"at":-1}}"#) }
        #expect(error == .invalidParams("params.at must be a non-negative integer (a seq), not -1"))
    }

    @Test(arguments: [
        RPCCall(Method.Hello.self, HelloParams(client: "reel", protocolVersion: 1)),
        RPCCall(Method.Dispatch.self, DispatchParams(batch: [Action(type: "a", payload: ["x": [1, 2]]), Action(type: "b")], expectedSeq: 4, idempotencyKey: "k")),
        RPCCall(Method.Get.self, GetParams(path: JSONPointer(tokens: ["todos", "0"]), at: 9)),
        RPCCall(Method.Subscribe.self, SubscribeParams(path: JSONPointer(tokens: ["n"]), mode: .patch)),
        RPCCall(Method.Unsubscribe.self, UnsubscribeParams(subscription: "s9")),
        RPCCall(Method.History.self, HistoryParams(from: 3, limit: 7)),
        RPCCall(Method.Diff.self, DiffParams(from: 0, to: 5)),
        RPCCall(Method.Replay.self, ReplayParams(to: 5, skip: [1, 4])),
        RPCCall(Method.Stats.self, StatsParams()),
        RPCCall(Method.Describe.self, DescribeParams()),
    ])
    func clientRequestsRoundTripThroughTheWire(call: RPCCall) throws {
        let request = call.request(id: 17)
        #expect(request.method == call.name.rawValue)
        let parsed = try RPCRequest.parse(request.encodedLine()).get()
        #expect(parsed.id == 17)
        #expect(try RPCCall(parsed) == call)
    }
}
