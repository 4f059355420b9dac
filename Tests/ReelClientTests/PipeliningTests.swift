import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Synchronization
import Testing

/// Many requests in flight on one connection, from many tasks.
@Suite(.timeLimit(.minutes(1)), .heavy) struct PipeliningTests {
    @Test func manyTasksShareOneConnectionAndEachGetsItsOwnAnswer() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/n", 0))
                let tasks = 100
                // Each task has a batch in flight while it writes its own slice and reads it back:
                // about two hundred requests in flight together, more than the daemon's 128 per
                // connection, so its back-pressure is exercised too. An answer matched to the
                // wrong request would show another task's value.
                let seqs = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                    for task in 0..<tasks {
                        group.addTask {
                            let path = "/t\(task)"
                            async let batch = client.dispatch(batch: [Stock.increment("/n"), Stock.increment("/n")])
                            let receipt = try await client.dispatch(Stock.set(path, .int(Int64(task))))
                            let slice = try await client.get(try JSONPointer(path))
                            #expect(slice.value == .int(Int64(task)))
                            #expect(slice.seq >= receipt.seq, "a read sees the dispatches answered before it")
                            return [receipt.seq] + Array(try await batch.seqs)
                        }
                    }
                    var all: [UInt64] = []
                    for try await seqs in group { all += seqs }
                    return all
                }
                #expect(seqs.sorted() == Array(2...UInt64(1 + 3 * tasks)), "every action got its own seq, none lost")
                #expect(try await client.get(try JSONPointer("/n")).value == .int(Int64(2 * tasks)))
            }
        }
    }

    @Test func answersAreMatchedByIdNotByArrivalOrder() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        // The scripted daemon holds the `get`s and answers all three at once, in reverse order.
        let held = Mutex<[JSONValue]>([])
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": return .send([ScriptedServer.hello(request)])
            case "get":
                let batch: [JSONValue]? = held.withLock { held in
                    held.append(request)
                    guard held.count == 3 else { return nil }
                    return held.reversed().map { ScriptedServer.result($0, ["seq": 7, "value": $0["params"]?["path"] ?? .null]) }
                }
                return batch.map { .send($0) } ?? .ignore
            default: return .close
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            async let a = client.get(try JSONPointer("/a"))
            async let b = client.get(try JSONPointer("/b"))
            async let c = client.get(try JSONPointer("/c"))
            let answers = try await [a, b, c]
            #expect(answers.map(\.value) == ["/a", "/b", "/c"])
        }
        await server.stop()
    }
}
