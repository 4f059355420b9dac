import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// The event loop's intake: requests routed (and dispatches handed to the store) as they are
/// read, held while the connection waits for admission or for room, never dropped or reordered.
@Suite(.timeLimit(.minutes(1)), .heavy) struct RequestIntakeTests {
    func line(_ id: Int, _ method: String, _ params: JSONValue? = nil) -> String {
        var members: JSONObject = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method)]
        if let params { members["params"] = params }
        return String(decoding: JSONValue.object(members).serialized(), as: UTF8.self) + "\n"
    }

    @Test func requestsSentAsTheConnectionOpensAreAnswered() async throws {
        try await ServerHarness.run { server throws in
            // Many peers that write at once, as they connect: their lines are read as soon as
            // each connection's pipeline is in place.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for peer in 0..<40 {
                    group.addTask {
                        try await server.connect { connection throws in
                            try await connection.send(
                                line(1, "hello") + line(2, "dispatch", Params.set("/peer\(peer)", .int(Int64(peer))))
                            )
                            #expect(try await connection.receive()["result"]?["server"] == "reeld")
                            let dispatched = try await connection.receive()
                            #expect(dispatched["id"] == 2)
                            #expect(dispatched["result"]?["seq"] != nil, "\(dispatched)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.store.snapshot.seq == 40)
        }
    }

    @Test func linesBeyondTheInFlightLimitWaitAndAreAnsweredInOrder() async throws {
        try await ServerHarness.run(configure: { $0.limits.maxRequestsInFlight = 3 }) { server throws in
            try await server.connect { connection throws in
                // 60 requests in one write: the intake holds what finds no slot and stops reading.
                var batch = ""
                for id in 1...60 {
                    batch += id % 3 == 0 ? line(id, "get", ["path": "/n"]) : line(id, "dispatch", Params.set("/n", .int(Int64(id))))
                }
                try await connection.send(batch)
                var lastDispatched = 0
                for id in 1...60 {
                    let answer = try await connection.receive()
                    #expect(answer["id"] == .int(Int64(id)))
                    if id % 3 == 0 {
                        // Read-your-writes: the get sees the dispatch before it (or a later one).
                        let value = try #require(answer["result"]?["value"]?.intValue)
                        #expect(value >= lastDispatched, "\(answer)")
                    } else {
                        lastDispatched = id
                    }
                }
            }
            #expect(server.store.snapshot.seq == 40)
        }
    }
}
