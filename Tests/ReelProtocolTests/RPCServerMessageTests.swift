import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// The client's side: reading what the server sends, including everything the server encodes.
struct RPCServerMessageTests {
    @Test(arguments: [
        RPCResponse(id: 1, result: DispatchOutcome(seqs: 3...3, batch: false).asJSON),
        RPCResponse(id: "x\"\n", result: Snapshot<JSONValue>(seq: 0, value: .null).asJSON),
        RPCResponse(id: 2, result: ServerHello(version: "1", seq: 0, reducer: ReducerIdentity(name: "n", version: "v")).asJSON),
        RPCResponse(id: nil, error: .parseError("bad")),
        RPCResponse(id: 5, error: .seqMismatch(expected: 1, current: 2)),
        RPCResponse(id: 5, error: RPCError(code: 1001, message: "no", data: .null)),
    ])
    func responsesRoundTrip(response: RPCResponse) throws {
        #expect(try RPCServerMessage.parse(response.encodedLine()) == .response(response))
    }

    @Test func helloAndStatsCarryTheSharedLogReport() throws {
        let report = SharedLogReport(
            location: "postgres://reel:***@db/reel", latestSeq: 42, lag: 2, reachable: false, error: "connection refused",
            conflicts: 3, followed: 17, lastAppendMicros: 950
        )
        var hello = ServerHello(version: "1", seq: 40, reducer: ReducerIdentity(name: "n", version: "v"))
        hello.sharedLog = SharedLogReport(location: report.location, latestSeq: 42, lag: 2, reachable: true)
        #expect(try ServerHello(result: hello.asJSON) == hello)
        #expect(hello.asJSON["sharedLog"] == ["location": "postgres://reel:***@db/reel", "latestSeq": 42, "lag": 2, "reachable": true])
        var stats = StatsResult(seq: 40)
        stats.sharedLog = report
        #expect(try StatsResult(result: stats.asJSON) == stats)
        #expect(try ServerHello(result: ServerHello(version: "1", seq: 0, reducer: ReducerIdentity(name: "n", version: "v")).asJSON).sharedLog == nil)
    }

    @Test func notificationsRoundTrip() throws {
        let envelope = ActionEnvelope(
            seq: 4, action: Action(type: "set", payload: ["v": 1]),
            time: Timestamp(nanosecondsSince1970: 1_795_273_445_123_456_789), peer: Peer(uid: 1, gid: 2, pid: 3))
        let notifications = [
            RPCNotification.update(subscription: "s", seq: 4, value: ["v": 1]),
            RPCNotification.update(subscription: "s", seq: 4, patch: JSONPatch([.remove(path: JSONPointer(tokens: ["v"]))])),
            RPCNotification.update(subscription: "s", seq: 4, actions: [envelope]),
            RPCNotification(method: "other"),
        ]
        for notification in notifications {
            #expect(try RPCServerMessage.parse(notification.encodedLine()) == .notification(notification))
        }
    }

    @Test func anActionInAnUpdateReadsBackToItsEnvelope() throws {
        let envelope = ActionEnvelope(
            seq: 4, action: Action(type: "set", payload: ["v": 1]),
            time: Timestamp(nanosecondsSince1970: -5), peer: Peer(uid: 1, gid: 2, pid: -3))
        let message = try RPCServerMessage.parse(RPCNotification.update(subscription: "s", seq: 4, actions: [envelope]).encodedLine())
        guard case .notification(let notification) = message, let action = notification.params?["actions"]?.arrayValue?.first else {
            Issue.record("not an update with actions: \(message)")
            return
        }
        #expect(action["seq"]?.intValue == 4)
        #expect(action["type"] == "set")
        #expect(action["payload"] == ["v": 1])
        #expect(action["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) == envelope.time)
        #expect(action["peer"] == ["uid": 1, "gid": 2, "pid": -3])
    }

    @Test func ignoresMembersItDoesNotKnow() throws {
        let message = try RPCServerMessage.parse(line(#"{"jsonrpc":"2.0","id":1,"result":{},"trace":"abc"}"#))
        #expect(message == .response(RPCResponse(id: 1, result: .object([:]))))
        let error = try RPCServerMessage.parse(line(#"{"jsonrpc":"2.0","id":1,"error":{"code":1008,"message":"busy","retryAfter":3}}"#))
        #expect(error == .response(RPCResponse(id: 1, error: RPCError(code: 1008, message: "busy"))))
    }

    @Test(arguments: [
        ("{", -32700, "the server sent invalid JSON: expected '\"' to start an object key, found end of input at byte 1"),
        ("[]", -32600, "the server sent an array instead of a JSON-RPC object"),
        (#"{"id":1,"result":1}"#, -32600, #"the server sent a message without "jsonrpc": "2.0""#),
        (#"{"jsonrpc":"2.0","method":3}"#, -32600, "the server sent a notification whose method is 3"),
        (#"{"jsonrpc":"2.0"}"#, -32600, "the server sent a message with neither an id nor a method"),
        (#"{"jsonrpc":"2.0","id":1.5,"result":1}"#, -32600, "the server sent a response whose id is 1.5"),
        (#"{"jsonrpc":"2.0","id":null,"result":1}"#, -32600, "the server sent a result with a null id"),
        (#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#, -32600, "the server sent a response with both a result and an error"),
        (#"{"jsonrpc":"2.0","id":1}"#, -32600, "the server sent a response with neither a result nor an error"),
        (#"{"jsonrpc":"2.0","id":1,"error":"bad"}"#, -32600, #"the server sent an error that is the string "bad", not an object"#),
        (#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#, -32600, "the server sent an error without an integer code"),
        (#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, -32600, "the server sent an error without a message"),
    ])
    func refusesWhatIsNotAResponseOrNotification(text: String, code: Int, message: String) {
        let error = #expect(throws: RPCError.self) { try RPCServerMessage.parse(Array(text.utf8)) }
        #expect(error == RPCError(code: code, message: message))
    }
}
