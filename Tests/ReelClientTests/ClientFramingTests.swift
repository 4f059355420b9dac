import ReelClient
import ReelJSON
import ReelTestSupport
import Testing

/// The client frames what the daemon sends with the shared line framer, under its own limit.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ClientFramingTests {
    @Test func aLineOverTheClientsLimitEndsTheConnectionAndSaysWhy() async throws {
        let dir = try TemporaryDirectory("reel-client-framing")
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request, seq: 0)])
            case "big": .send([ScriptedServer.result(request, .string(String(repeating: "x", count: 4096)))])
            case "small": .send([ScriptedServer.result(request, "ok")])
            default: .close
            }
        }
        var configuration = ReelClientConfiguration.forTests
        configuration.maxLineLength = 1024
        try await withReelClient(socketPath: server.socketPath, configuration: configuration) { client throws in
            #expect(try await client.call(method: "small") == "ok")
            let error = await clientError { () throws(ReelClientError) in _ = try await client.call(method: "big") }
            #expect(error?.code == .connectionLost)
            #expect(error?.message.contains("a line longer than 1024 bytes") == true, "\(error?.message ?? "no error")")
            // The client reconnects and carries on.
            #expect(try await client.call(method: "small") == "ok")
        }
        await server.stop()
    }
}
