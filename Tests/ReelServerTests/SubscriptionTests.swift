import Foundation
import ReelCore
import ReelJSON
import ReelServer
import ReelStore
import ReelTestSupport
import Testing

/// Subscriptions over a real socket: resuming with `since`, slow readers, limits.
@Suite(.timeLimit(.minutes(1)), .heavy) struct SubscriptionTests {
    func dispatch(_ server: ServerHarness, _ count: Int, path: String = "/n", from start: Int = 0) async throws {
        try await server.connect { writer throws in
            for i in start..<(start + count) {
                _ = try await writer.request(i, "dispatch", Params.set(path, .int(Int64(i))))
            }
        }
    }

    @Test func sinceResumesAfterADisconnectWithNoGapAndNoDuplicate() async throws {
        try await ServerHarness.run { server throws in
            try await dispatch(server, 3)  // seqs 1...3, /n = 2
            let seenSeq: Int64 = try await server.connect { watcher throws in
                let subscribed = try await watcher.request(1, "subscribe", ["path": "/n", "mode": "patch"])
                return try #require(subscribed["result"]?["seq"]?.intValue)
            }
            #expect(seenSeq == 3)
            try await dispatch(server, 4, from: 10)  // seqs 4...7 while disconnected, /n = 13

            try await server.connect { watcher throws in
                let resumed = try await watcher.request(1, "subscribe", ["path": "/n", "mode": "patch", "since": .int(seenSeq)])
                #expect(resumed["result"]?["seq"] == .int(seenSeq))
                var value = try #require(resumed["result"]?["value"])
                #expect(value == 2)
                let update = try await watcher.receive()
                #expect(update["params"]?["seq"] == 7)
                try JSONPatch(try #require(update["params"]?["patch"])).apply(to: &value)
                #expect(value == 13)

                let actions = try await watcher.request(2, "subscribe", ["mode": "actions", "since": 5])
                #expect(actions["result"]?["seq"] == 5)
                let missed = try await watcher.receive()
                #expect(missed["params"]?["actions"]?.arrayValue?.compactMap { $0["seq"]?.intValue } == [6, 7])
            }
        }
    }

    @Test func aStalledSubscriberHoldsUpNobodyAndGetsCoalescedUpdates() async throws {
        try await ServerHarness.run { server throws in
            let big = JSONValue.string(String(repeating: "v", count: 16 << 10))
            try await server.connect { stalled throws in
                _ = try await stalled.request(1, "subscribe", ["path": "", "mode": "value"])
                try await server.connect { reader throws in
                    _ = try await reader.request(1, "subscribe", ["path": "/n", "mode": "value"])
                    // 300 commits of a 16 KiB state: far more than the stalled peer's socket buffers.
                    try await server.connect { writer throws in
                        for i in 0..<300 {
                            let batch: JSONValue = ["actions": [
                                ["type": "set", "payload": ["path": "/blob", "value": big]],
                                ["type": "set", "payload": ["path": "/n", "value": .int(Int64(i))]],
                            ]]
                            _ = try await writer.request(i, "dispatch", batch)
                        }
                    }
                    // The reader keeps up meanwhile and ends on the last value.
                    var last = JSONValue.null
                    while last != 299 {
                        last = try #require(try await reader.receive()["params"]?["value"])
                    }
                }
                // The stalled peer, reading at last, gets a few coalesced updates, not 300, and the
                // last one carries the final state.
                _ = try await stalled.receive()  // its subscribe response
                var updates = 0
                var final = JSONValue.null
                while final["n"] != 299 {
                    final = try #require(try await stalled.receive()["params"]?["value"])
                    updates += 1
                }
                #expect(updates < 300)
            }
        }
    }

    @Test func subscriptionAndConnectionLimitsAnswer1008() async throws {
        try await ServerHarness.run(configure: {
            $0.limits.maxSubscriptionsPerConnection = 2
            $0.limits.maxConnections = 2
        }) { server throws in
            try await server.connect { connection throws in
                #expect(try await connection.request(1, "subscribe", ["path": "/a"])["result"] != nil)
                #expect(try await connection.request(2, "subscribe", ["path": "/b"])["result"] != nil)
                #expect(try await connection.request(3, "subscribe", ["path": "/c"])["error"]?["code"] == 1008)
                let id = try #require(try await connection.request(4, "subscribe", ["path": "/a", "mode": "actions"])["error"])
                #expect(id["code"] == 1008)
                try await server.connect { second throws in
                    #expect(try await second.request(1, "hello")["result"] != nil)
                    try await server.connect { third throws in
                        #expect(try await third.receive()["error"]?["code"] == 1008)
                        #expect(await third.isClosed())
                    }
                }
                // A closed connection gives its place back; a refused one never took one.
                try await waitUntil("the second connection's place given back") {
                    try await connection.request(10, "stats")["result"]?["connections"] == 1
                }
                try await server.connect { fourth throws in
                    #expect(try await fourth.request(1, "hello")["result"] != nil)
                }
            }
        }
    }
}
