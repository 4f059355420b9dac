import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// `close()`, giving up on reconnecting, and cancellation.
@Suite(.timeLimit(.minutes(1)), .heavy) struct LifecycleTests {
    /// A daemon that greets, subscribes, and never answers `get`.
    static func silentOnGet(socketPath: String) async throws -> ScriptedServer {
        try await ScriptedServer.start(socketPath: socketPath) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request)])
            case "subscribe": .send([ScriptedServer.result(request, ["subscription": "s1", "seq": 0, "value": .null])])
            case "get": .ignore
            default: .close
            }
        }
    }

    @Test func closeFailsWaitingRequestsAndFinishesSubscriptions() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.silentOnGet(socketPath: dir.sub("s.sock"))
        let client = try await ReelClient.connect(socketPath: server.socketPath, configuration: .forTests)
        let subscription = try await client.subscribe()
        let pending = Task(executorPreference: TestThreads.shared) { await clientError { () throws(ReelClientError) in try await client.get() } }
        // Wait until the get is on the wire, so that close() meets it in flight.
        try await waitUntil("the get to reach the daemon") { !server.received("get").isEmpty }

        await client.close()
        let error = await pending.value
        #expect(error?.code == .closed)
        #expect(error?.message.contains("closed") == true)
        let ended = try await withDeadline(.seconds(10), "the subscription to finish") {
            var iterator = subscription.makeAsyncIterator()
            return try await iterator.next() == nil
        }
        #expect(ended, "a subscription finishes normally when its client is closed")
        let after = await clientError { () throws(ReelClientError) in try await client.dispatch(Stock.increment()) }
        #expect(after?.code == .closed)
        await client.close()  // a second close does nothing
        await server.stop()
    }

    @Test func givingUpOnReconnectingFailsWaitingRequestsAndEndsSubscriptions() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.silentOnGet(socketPath: dir.sub("s.sock"))
        var configuration = ReelClientConfiguration.forTests
        configuration.reconnect = ReconnectPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), giveUpAfter: .milliseconds(300))
        let client = try await ReelClient.connect(socketPath: server.socketPath, configuration: configuration)
        let subscription = try await client.subscribe(mode: .value)
        await server.stop()  // the daemon goes away for good

        let read = await clientError { () throws(ReelClientError) in try await client.stats() }
        #expect(read?.code == .connectionFailed)
        #expect(read?.message.contains("gave up after") == true)
        let ended = try await withDeadline(.seconds(10), "the subscription to end") { () async -> ReelClientError? in
            await clientError { () throws(ReelClientError) in
                for try await _ in subscription {}
            }
        }
        #expect(ended?.code == .connectionFailed)
        #expect(!client.isConnected)
        await client.close()
    }

    @Test func aDisabledReconnectPolicyClosesTheClientAtTheFirstDrop() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await ConnectionLossTests.dropsTheFirstConnection(socketPath: dir.sub("s.sock"))
        var configuration = ReelClientConfiguration.forTests
        configuration.reconnect = .disabled
        let client = try await ReelClient.connect(socketPath: server.socketPath, configuration: configuration)
        let read = await clientError { () throws(ReelClientError) in try await client.get() }
        #expect(read?.code == .connectionFailed)
        #expect(server.received("hello").count == 1, "no second connection was tried")
        await client.close()
        await server.stop()
    }

    @Test func cancellingAWaitingRequestFailsItWithCancelled() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await Self.silentOnGet(socketPath: dir.sub("s.sock"))
        let client = try await ReelClient.connect(socketPath: server.socketPath, configuration: .forTests)
        await server.stop()  // nothing answers now: the request waits for a reconnection that never comes

        let waiting = Task(executorPreference: TestThreads.shared) { await clientError { () throws(ReelClientError) in try await client.history() } }
        waiting.cancel()
        let error = try await withDeadline(.seconds(10), "the cancelled request") { await waiting.value }
        #expect(error?.code == .cancelled)
        await client.close()
    }
}
