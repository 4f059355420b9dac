import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// What happens to requests and subscriptions when the connection drops, made deterministic with
/// a scripted daemon that closes the connection exactly when a test needs it to.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ConnectionLossTests {
    /// A daemon that drops the first connection on its first `dispatch` (or `get`, or `drop`)
    /// and answers normally on the next connections.
    static func dropsTheFirstConnection(socketPath: String) async throws -> ScriptedServer {
        try await ScriptedServer.start(socketPath: socketPath) { request, connection in
            switch request["method"]?.stringValue {
            case "hello":
                return .send([ScriptedServer.hello(request)])
            case "dispatch" where connection == 1, "get" where connection == 1:
                return .close
            case "dispatch":
                let duplicate = request["params"]?["idempotencyKey"] != nil
                return .send([ScriptedServer.result(request, duplicate ? ["seq": 1, "duplicate": true] : ["seq": 1])])
            case "get":
                return .send([ScriptedServer.result(request, ["seq": 1, "value": 42])])
            default:
                return .close
            }
        }
    }

    @Test func aDispatchWithoutKeyInFlightAtADropFailsWithOutcomeUnknown() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.dropsTheFirstConnection(socketPath: dir.sub("s.sock"))
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            let error = await clientError { () throws(ReelClientError) in try await client.dispatch(Stock.increment()) }
            #expect(error?.code == .connectionLost)
            #expect(error?.message.contains("may or may not have been carried out") == true)
            #expect(error?.message.contains("idempotency key") == true)
            // The client reconnects (a read goes through) but never sent the dispatch again.
            #expect(try await client.get().value == 42)
            #expect(server.received("dispatch").count == 1)
        }
        await server.stop()
    }

    @Test func aDispatchWithKeyInFlightAtADropIsResentAfterHello() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.dropsTheFirstConnection(socketPath: dir.sub("s.sock"))
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            let receipt = try await client.dispatch(Stock.increment(), idempotencyKey: "key-1")
            #expect(receipt == DispatchReceipt(seq: 1, duplicate: true))
        }
        await server.stop()
        let dispatches = server.received("dispatch")
        #expect(dispatches.map(\.connection) == [1, 2])
        #expect(dispatches.map { $0.params?["idempotencyKey"] } == ["key-1", "key-1"])
        #expect(dispatches.allSatisfy { $0.params?["action"] == ["type": "increment", "payload": ["path": "/n", "by": 1]] })
        // `hello` opens every connection, before anything else is sent on it.
        let perConnection = Dictionary(grouping: server.received, by: \.connection)
        #expect(perConnection[1]?.first?.method == "hello")
        #expect(perConnection[2]?.first?.method == "hello")
        #expect(perConnection[2]?.first?.params?["protocol"] == 1)
    }

    @Test func aReadInFlightAtADropIsResent() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.dropsTheFirstConnection(socketPath: dir.sub("s.sock"))
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            #expect(try await client.get() == Snapshot(seq: 1, value: 42))
        }
        await server.stop()
        #expect(server.received("get").map(\.connection) == [1, 2])
    }

    @Test func aRequestRefusedAsShuttingDownIsSentAgainToTheNextDaemon() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        // 1009 means "not carried out", so even a dispatch without a key is safe to send again.
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, connection in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request)])
            case "dispatch" where connection == 1:
                .sendThenClose([ScriptedServer.error(request, code: 1009, message: "the store is shutting down")])
            case "dispatch": .send([ScriptedServer.result(request, ["seq": 3])])
            default: .close
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            #expect(try await client.dispatch(Stock.increment()) == DispatchReceipt(seq: 3))
        }
        await server.stop()
        #expect(server.received("dispatch").map(\.connection) == [1, 2])
    }

    @Test func aSubscriptionResumesFromTheLastDeliveredSeq() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, connection in
            switch request["method"]?.stringValue {
            case "hello":
                return .send([ScriptedServer.hello(request, seq: 5)])
            case "subscribe" where connection == 1:
                // The answer and the first update in one write: the update must not be lost.
                return .send([
                    ScriptedServer.result(request, ["subscription": "s1", "seq": 5]),
                    ScriptedServer.update("s1", seq: 6, ["actions": [ScriptedServer.action(seq: 6)]]),
                ])
            case "subscribe":
                let since = request["params"]?["since"]?.intValue ?? -1
                return .send([
                    ScriptedServer.result(request, ["subscription": "s2", "seq": .int(since)]),
                    ScriptedServer.update("s2", seq: 7, ["actions": [ScriptedServer.action(seq: 7)]]),
                ])
            default:
                return .close  // `drop`: the test's way to cut the connection
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            let subscription = try await client.subscribe(mode: .actions)
            #expect(subscription.startSeq == 5)
            let seqs = try await withDeadline(.seconds(20), "updates 6 and 7") {
                var seqs: [UInt64] = []
                for try await update in subscription {
                    seqs += update.actions?.map(\.seq) ?? []
                    if seqs == [6] {
                        let dropped = await clientError { () throws(ReelClientError) in try await client.call(method: "drop") }
                        #expect(dropped?.code == .connectionLost)
                    }
                    if seqs.count == 2 { break }
                }
                return seqs
            }
            #expect(seqs == [6, 7])
            #expect(subscription.lastDeliveredSeq == 7)
        }
        await server.stop()
        let subscribes = server.received("subscribe")
        #expect(subscribes.map(\.connection) == [1, 2])
        #expect(subscribes.last?.params == ["since": 6, "mode": "actions"])
    }

    @Test func aGapInActionsEndsTheSubscriptionWithAProtocolViolation() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request, seq: 5)])
            case "subscribe":
                .send([
                    ScriptedServer.result(request, ["subscription": "s1", "seq": 5]),
                    ScriptedServer.update("s1", seq: 7, ["actions": [ScriptedServer.action(seq: 7)]]),  // 6 is missing
                ])
            case "unsubscribe": .send([ScriptedServer.result(request, [:])])
            default: .close
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            let subscription = try await client.subscribe(mode: .actions)
            let error = try await withDeadline(.seconds(20), "the subscription to end") { () async -> ReelClientError? in
                await clientError { () throws(ReelClientError) in
                    for try await _ in subscription {}
                }
            }
            #expect(error?.code == .protocolViolation)
            #expect(error?.message.contains("[7] after seq 5") == true)
            // The daemon is told to stop sending for it; the connection itself carries on.
            _ = try await client.hello()
            #expect(server.received("unsubscribe").map { $0.params } == [["subscription": "s1"]])
        }
        await server.stop()
    }
}
