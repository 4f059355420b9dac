import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// Every method and error code of the protocol against the real `reeld` executable.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldProtocolTests {
    @Test func everyMethodAndErrorCode() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            extraArguments: ["--allow-admin", "none", "--max-subscriptions", "3"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { c throws in
            #expect(try await c.request(1, "hello", ["client": "e2e"])["result"]?["protocol"] == 1)
            // dispatch: single, batch, expectedSeq, idempotency
            #expect(try await c.request(2, "dispatch", Params.dispatch("set", ["path": "/hp", "value": 10]))["result"] == ["seq": 1])
            let batch: JSONValue = ["actions": [["type": "increment", "payload": ["path": "/hp", "by": -4]], ["type": "merge", "payload": ["name": "hero"]]], "idempotencyKey": "k1"]
            #expect(try await c.request(3, "dispatch", batch)["result"] == ["seqs": [2, 3]])
            #expect(try await c.request(4, "dispatch", batch)["result"] == ["seqs": [2, 3], "duplicate": true])
            var stale = Params.dispatch("set", ["path": "/hp", "value": 0])
            if case .object(var members) = stale { members["expectedSeq"] = 1; stale = .object(members) }
            let mismatch = try await c.request(5, "dispatch", stale)
            #expect(mismatch["error"]?["code"] == 1003)
            #expect(mismatch["error"]?["data"]?["seq"] == 3)
            // subscriptions, one per mode
            let value = try #require(try await c.request(6, "subscribe", ["path": "/hp", "mode": "value"])["result"]?["subscription"])
            let patch = try #require(try await c.request(7, "subscribe", ["path": "/hp", "mode": "patch"])["result"]?["subscription"])
            let actions = try #require(try await c.request(8, "subscribe", ["mode": "actions"])["result"]?["subscription"])
            #expect(try await c.request(9, "subscribe", ["path": "/x"])["error"]?["code"] == 1008)
            _ = try await TestConnection.open(socketPath: daemon.socketPath) { other throws in
                try await other.request(1, "dispatch", Params.dispatch("append", ["path": "/log", "value": "hit"]))
            }
            _ = try await TestConnection.open(socketPath: daemon.socketPath) { other throws in
                try await other.request(1, "dispatch", Params.dispatch("patch", [["op": "replace", "path": "/hp", "value": 1]]))
            }
            var seen: Set<String> = []
            while seen.count < 3 {
                let update = try await c.receive()
                let params = try #require(update["params"])
                switch params["subscription"] {
                case value: #expect(params["value"] == 1); seen.insert("value")
                case patch: #expect(params["patch"] == [["op": "replace", "path": "", "value": 1]]); seen.insert("patch")
                case actions:
                    if params["actions"]?.arrayValue?.last?["seq"] == 5 { seen.insert("actions") }
                default: Issue.record("unexpected \(update)")
                }
            }
            #expect(try await c.request(10, "unsubscribe", ["subscription": value])["result"] == [:])
            // reads and time travel
            #expect(try await c.request(11, "get", ["path": "/hp"])["result"] == ["seq": 5, "value": 1])
            #expect(try await c.request(12, "get", ["path": "/hp", "at": 2])["result"] == ["seq": 2, "value": 6])
            #expect(try await c.request(13, "history", ["types": ["append"]])["result"]?["actions"]?.arrayValue?.count == 1)
            let newest = try #require(try await c.request(31, "history", ["order": "desc", "limit": 2])["result"])
            #expect(newest["actions"]?.arrayValue?.map { $0["seq"] } == [5, 4])
            #expect(newest["next"] == 3, "newest first, next is the to of the following page")
            #expect(try await c.request(14, "diff", ["from": 1, "to": 2])["result"] == ["patch": [["op": "replace", "path": "/hp", "value": 6]]])
            #expect(try await c.request(15, "replay", ["skip": [5]])["result"]?["value"]?["hp"] == 6)
            // errors
            #expect(try await c.request(16, "stats")["error"]?["code"] == 1004)
            #expect(try await c.request(17, "dispatch", Params.dispatch("remove", ["path": "/nope"]))["error"]?["code"] == 1001)
            #expect(try await c.request(18, "dispatch", ["action": ["type": "frobnicate"]])["error"]?["code"] == 1002)
            #expect(try await c.request(19, "get", ["path": "/nope"])["error"]?["code"] == 1005)
            #expect(try await c.request(20, "get", ["at": 99])["error"]?["code"] == 1006)
            #expect(try await c.request(21, "nosuchmethod")["error"]?["code"] == -32601)
            #expect(try await c.request(22, "get", ["path": 7])["error"]?["code"] == -32602)
            try await c.send("{\"jsonrpc\":\"2.0\",\"method\":\"get\"}\n")
            #expect(try await c.receive()["error"]?["code"] == -32600)
            try await c.send("{not json\n")
            #expect(try await c.receive()["error"]?["code"] == -32700)
            #expect(try await c.request(23, "dispatch", Params.dispatch("@revert", ["to": 1]))["result"] == ["seq": 6])
            #expect(try await c.request(24, "get")["result"] == ["seq": 6, "value": ["hp": 10]])
        }
        #expect(try await daemon.stop() == 0)
    }
}
