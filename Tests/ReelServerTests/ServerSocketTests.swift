import Foundation
import ReelCore
import ReelJSON
import ReelServer
import ReelStore
import ReelTestSupport
import Testing

/// The protocol over a real Unix socket: framing, ordering, errors, peer credentials, subscriptions.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ServerSocketTests {
    @Test func helloAndPeerCredentialsAreStamped() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { connection throws in
                let hello = try await connection.request(1, "hello", ["client": "test"])
                #expect(hello["id"] == 1)
                #expect(hello["result"]?["server"] == "reeld")
                #expect(try await connection.request(2, "dispatch", Params.set("/a", 1))["result"] == ["seq": 1])
            }
            let logged = try #require(try server.store.timeline.history().actions.first)
            #expect(logged.peer.uid == UInt32(getuid()))
            #expect(logged.peer.pid == getpid())
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { connection throws in
                var lines = ""
                for i in 1...20 {
                    let method = i % 2 == 0 ? "get" : "dispatch"
                    let params: JSONValue = i % 2 == 0 ? ["path": ""] : Params.set("/n", .int(Int64(i)))
                    lines += (["jsonrpc": "2.0", "id": .int(Int64(i)), "method": .string(method), "params": params] as JSONValue).jsonString + "\n"
                }
                try await connection.send(lines)  // all at once, in one write
                for i in 1...20 {
                    let response = try await connection.receive()
                    #expect(response["id"] == .int(Int64(i)))
                    if i % 2 == 0 {
                        // A get sees (at least) every dispatch sent before it on this connection.
                        let n = try #require(response["result"]?["value"]?["n"]?.intValue)
                        #expect(n >= Int64(i - 1))
                    } else {
                        // Dispatches get seqs in request order.
                        #expect(response["result"]?["seq"] == .int(Int64((i + 1) / 2)))
                    }
                }
            }
        }
    }

    /// Dispatches read in one turn of an event loop: one may be committed on the loop, the rest
    /// go to the writer together. Judged one at a time, each was "alone" once the one before it
    /// was committed: 50 syncs for 50 dispatches that arrived together.
    @Test func dispatchesReadTogetherShareCommits() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { connection throws in
                let responses = try await connection.dispatchTogether((1...50).map { Params.set("/n", .int(Int64($0))) })
                #expect(responses.map { $0["result"]?["seq"] } == (1...50).map { .int(Int64($0)) })
            }
            let statistics = server.store.statistics
            #expect(statistics.actionsCommitted == 50)
            #expect(statistics.commits <= 25, "\(statistics.commits) commits for 50 dispatches read together")
            #expect(server.store.snapshot.state == ["n": 50])
        }
    }

    @Test func badInputGetsItsErrorAndTheConnectionGoesOn() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { connection throws in
                try await connection.send("this is not json\n")
                #expect(try await connection.receive()["error"]?["code"] == -32700)
                try await connection.send("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"frobnicate\"}\n")
                let unknown = try await connection.receive()
                #expect(unknown["error"]?["code"] == -32601)
                #expect(unknown["id"] == 7)
                #expect(try await connection.request(8, "get", ["at": "yesterday"])["error"]?["code"] == -32602)
                #expect(try await connection.request(9, "dispatch", ["action": ["type": "nope"]])["error"]?["code"] == 1002)
                #expect(try await connection.request(10, "get")["result"] == ["seq": 0, "value": [:]])
            }
        }
    }

    @Test func anOverlongLineIsRefusedAndOnlyThatConnectionCloses() async throws {
        try await ServerHarness.run(configure: { $0.limits.maxLineLength = 1024 }) { server throws in
            try await server.connect { other throws in
                try await server.connect { connection throws in
                    try await connection.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get\",\"params\":{\"path\":\"/" + String(repeating: "x", count: 2000) + "\"}}\n")
                    let refused = try await connection.receive()
                    #expect(refused["error"]?["code"] == 1007)
                    #expect(await connection.isClosed())
                }
                #expect(try await other.request(1, "hello")["result"]?["protocol"] == 1)
            }
        }
    }

    /// Each query and subscription runs in a task of its own, yet a connection's subscribes and
    /// unsubscribes take effect in the order they were read, and a call read after one sees it.
    @Test func pipelinedSubscribesAndUnsubscribesTakeEffectInTheOrderRead() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { connection throws in
                for n in 1...3 {
                    #expect(try await connection.request(n, "dispatch", Params.set("/n", .int(Int64(n))))["result"] == ["seq": .int(Int64(n))])
                }
                // The subscribe reads the state at seq 1 (a replay, on the query pool): the
                // unsubscribe and the stats read after it wait for it.
                try await connection.send(
                    #"{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"path":"/n","since":1}}"# + "\n"
                        + #"{"jsonrpc":"2.0","id":5,"method":"unsubscribe","params":{"subscription":"s1"}}"# + "\n"
                        + #"{"jsonrpc":"2.0","id":6,"method":"unsubscribe","params":{"subscription":"s1"}}"# + "\n"
                )
                var answers: [JSONValue] = []
                while answers.count < 3 {
                    let message = try await connection.receive()
                    if message["method"] != "update" { answers.append(message) }
                }
                #expect(answers[0]["result"]?["subscription"] == "s1")
                #expect(answers[0]["result"]?["seq"] == 1)
                #expect(answers[1]["id"] == 5 && answers[1]["result"] == [:], "the subscription was there to end")
                #expect(answers[2]["id"] == 6 && answers[2]["error"]?["code"] == -32602, "and was gone after")
            }
        }
    }

    /// A line too long ends the connection, but only after the answers to the requests before it.
    @Test func aFramingErrorIsAnsweredAfterTheRequestsBeforeItThenCloses() async throws {
        try await ServerHarness.run(configure: { $0.limits.maxLineLength = 1024 }) { server throws in
            try await server.connect { connection throws in
                try await connection.send(
                    #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/a","value":1}}}}"# + "\n"
                        + #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"path":"/a"}}"# + "\n"
                        + #"{"jsonrpc":"2.0","id":3,"method":"hello"}"# + "\n"
                        + String(repeating: "x", count: 2000) + "\n"
                )
                let answers = [try await connection.receive(), try await connection.receive(), try await connection.receive()]
                #expect(answers.map { $0["id"] } == [1, 2, 3])
                #expect(answers[1]["result"]?["value"] == 1)
                let refused = try await connection.receive()
                #expect(refused["id"] == .null && refused["error"]?["code"] == 1007)
                #expect(await connection.isClosed())
            }
        }
    }

    @Test func subscriptionsInEachMode() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { watcher throws in
                let value = try await watcher.request(1, "subscribe", ["path": "/todo", "mode": "value"])
                #expect(value["result"]?["seq"] == 0)
                #expect(value["result"]?["value"] == .null)
                let valueID = try #require(value["result"]?["subscription"])
                let patch = try await watcher.request(2, "subscribe", ["path": "/todo", "mode": "patch"])
                let patchID = try #require(patch["result"]?["subscription"])
                let actions = try await watcher.request(3, "subscribe", ["mode": "actions"])
                let actionsID = try #require(actions["result"]?["subscription"])
                #expect(actions["result"]?.objectValue?.keys.contains("value") == false)

                try await server.connect { writer throws in
                    _ = try await writer.request(1, "dispatch", Params.set("/todo", ["title": "milk"]))
                    _ = try await writer.request(2, "dispatch", Params.set("/other", 1))  // not under /todo
                    _ = try await writer.request(3, "dispatch", Params.set("/todo/title", "eggs"))
                }
                let eggs: JSONValue = ["title": "eggs"]
                var lastValue = JSONValue.null
                var values: [JSONValue] = []
                var rebuilt = JSONValue.null
                var actionSeqs: [JSONValue] = []
                var messages = 0
                while actionSeqs.count < 3 || lastValue != eggs || rebuilt != eggs {
                    messages += 1
                    guard messages <= 10 else {
                        Issue.record("updates never converged: value \(lastValue), patched \(rebuilt), actions \(actionSeqs)")
                        return
                    }
                    let update = try await watcher.receive()
                    #expect(update["method"] == "update")
                    let params = try #require(update["params"])
                    switch params["subscription"] {
                    case valueID:
                        lastValue = try #require(params["value"])
                        values.append(lastValue)
                    case patchID:
                        // Patch mode: applying the patches in order gives the value.
                        try JSONPatch(try #require(params["patch"])).apply(to: &rebuilt)
                    case actionsID:
                        actionSeqs += params["actions"]?.arrayValue?.compactMap { $0["seq"] } ?? []
                    default:
                        Issue.record("update for an unknown subscription: \(params)")
                    }
                }
                // Value mode: an update only when /todo changed (seq 2 did not touch it). Updates
                // coalesce to the newest state, so the one bringing "milk" may carry seq 1 or 2.
                #expect(zip(values, [JSONValue.null] + values).allSatisfy { $0 != $1 }, "\(values)")
                #expect(values.count <= 2)
                // Actions mode: every action, in order, none missing.
                #expect(actionSeqs == [1, 2, 3])
            }
        }
    }

    @Test func everyMethodOverTheSocket() async throws {
        try await ServerHarness.run(authorize: { permission, _ in permission != .admin }) { server throws in
            try await server.connect { connection throws in
                _ = try await connection.request(1, "dispatch", Params.set("/hp", 10))
                _ = try await connection.request(2, "dispatch", Params.set("/hp", 4))
                #expect(try await connection.request(3, "get", ["path": "/hp", "at": 1])["result"] == ["seq": 1, "value": 10])
                #expect(try await connection.request(4, "history", ["limit": 1])["result"]?["next"] == 2)
                #expect(try await connection.request(5, "diff", ["from": 0, "to": 2])["result"] == ["patch": [["op": "add", "path": "/hp", "value": 4]]])
                #expect(try await connection.request(6, "replay", ["skip": [2]])["result"] == ["value": ["hp": 10]])
                #expect(try await connection.request(7, "stats")["error"]?["code"] == 1004)
                let subscribed = try await connection.request(8, "subscribe", ["path": "/hp"])
                let id = try #require(subscribed["result"]?["subscription"])
                #expect(try await connection.request(9, "unsubscribe", ["subscription": id])["result"] == [:])
                #expect(try await connection.request(10, "unsubscribe", ["subscription": id])["error"]?["code"] == -32602)
                // Unsubscribed: a change sends no update; the next message is the answer to 12.
                _ = try await connection.request(11, "dispatch", Params.set("/hp", 1))
                #expect(try await connection.request(12, "get")["id"] == 12)
            }
        }
    }
}
