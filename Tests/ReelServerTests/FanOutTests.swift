import Foundation
import ReelCore
import ReelJSON
import ReelServer
import ReelStore
import ReelTestSupport
import Testing

/// Many subscribers served from one shared encoding per commit (the update feed): each still gets
/// exactly what it would get alone, and one that falls far behind catches up from the log.
@Suite(.timeLimit(.minutes(2)), .heavy) struct FanOutTests {
    /// Opens `count` connections at once for `body`.
    func withConnections<R: Sendable>(
        _ server: ServerHarness, _ count: Int, _ body: ([TestConnection]) async throws -> R
    ) async throws -> R {
        func open(_ opened: [TestConnection]) async throws -> R {
            if opened.count == count { return try await body(opened) }
            return try await server.connect { try await open(opened + [$0]) }
        }
        return try await open([])
    }

    func dispatch(_ server: ServerHarness, values: Range<Int>, path: String = "/n") async throws {
        try await server.connect { writer throws in
            for i in values {
                _ = try await writer.request(i, "dispatch", Params.set(path, .int(Int64(i))))
            }
        }
    }

    @Test func everySubscriberOfEveryModeGetsWhatItWouldGetAlone() async throws {
        try await ServerHarness.run { server throws in
            try await dispatch(server, values: 0..<5)  // seqs 1...5, /n = 4
            let modes = ["actions", "value", "patch"]
            try await withConnections(server, 12) { watchers throws in
                var starts: [(seq: Int64, value: JSONValue)] = []
                for (index, watcher) in watchers.enumerated() {
                    var params: JSONValue = ["mode": .string(modes[index % 3])]
                    if index % 3 != 0, case .object(var members) = params {
                        members["path"] = "/n"
                        params = .object(members)
                    }
                    if index < 3, case .object(var members) = params {
                        members["since"] = 2  // resumes: its first updates come from the log or a comparison
                        params = .object(members)
                    }
                    let result = try await watcher.request(1, "subscribe", params)
                    starts.append((try #require(result["result"]?["seq"]?.intValue), result["result"]?["value"] ?? .null))
                }
                // Two writers at once: commits of one and of several actions, some not touching /n.
                async let first: Void = dispatch(server, values: 100..<160)
                async let second: Void = dispatch(server, values: 200..<240, path: "/other")
                _ = try await (first, second)
                let final = Int64(server.store.snapshot.seq)
                let finalValue = try #require(server.store.snapshot.state["n"])

                var actionsSeen: [[Int64]] = []
                for (index, watcher) in watchers.enumerated() {
                    switch modes[index % 3] {
                    case "actions":
                        var seqs: [Int64] = []
                        while seqs.last ?? starts[index].seq < final {
                            let update = try await watcher.receive()
                            let actions = try #require(update["params"]?["actions"]?.arrayValue)
                            seqs += actions.compactMap { $0["seq"]?.intValue }
                            #expect(update["params"]?["seq"]?.intValue == seqs.last)
                        }
                        #expect(seqs == Array((starts[index].seq + 1)...final), "every action once, in order")
                        actionsSeen.append(seqs)
                    case "value":
                        var value = starts[index].value
                        var lastSeq = starts[index].seq
                        while value != finalValue {
                            let update = try await watcher.receive()
                            let seq = try #require(update["params"]?["seq"]?.intValue)
                            #expect(seq > lastSeq)
                            lastSeq = seq
                            value = try #require(update["params"]?["value"])
                        }
                    default:
                        var value = starts[index].value
                        while value != finalValue {
                            let update = try await watcher.receive()
                            try JSONPatch(try #require(update["params"]?["patch"])).apply(to: &value)
                        }
                    }
                }
                #expect(actionsSeen.count == 4)
            }
        }
    }

    /// Subscribers of many paths, each changed by actions of every kind, at the path, above it
    /// (a parent replaced, removed, merged into, `@revert`) and below it, and some paths no action
    /// touches: each gets its path's value as of every update's seq and ends with the last one.
    /// (With more paths watched than a commit changes, the feed reads again only the paths each
    /// commit changed, as the writer recorded them.)
    @Test func subscribersOfManyPathsGetEveryChangeOfTheirPathWhateverMadeIt() async throws {
        try await ServerHarness.run { server throws in
            let paths = ["/p/a", "/p/b", "/q", "/r/s/t", "/r", "/list/1", "/missing/x", "/quiet", "/p"]
            try await server.connect { writer throws in
                var id = 0
                func dispatch(_ type: String, _ payload: JSONValue) async throws {
                    id += 1
                    let answer = try await writer.request(id, "dispatch", Params.dispatch(type, payload))
                    #expect(answer["result"]?["seq"] != nil, "\(type) \(payload): \(answer)")
                }
                try await dispatch("merge", ["p": ["a": 1, "b": 2], "q": 0, "r": ["s": ["t": 1]], "list": [1, 2, 3], "quiet": "still"])
                try await withConnections(server, paths.count) { watchers throws in
                    var starts: [(seq: Int64, value: JSONValue)] = []
                    for (index, watcher) in watchers.enumerated() {
                        let mode: JSONValue = index % 2 == 0 ? "value" : "patch"
                        let result = try await watcher.request(1, "subscribe", ["path": .string(paths[index]), "mode": mode])
                        starts.append((try #require(result["result"]?["seq"]?.intValue), result["result"]?["value"] ?? .null))
                    }
                    // The state after each seq, from the store itself (one writer: the snapshot after
                    // each answer is that seq's).
                    var states: [Int64: JSONValue] = [Int64(server.store.snapshot.seq): server.store.snapshot.state]
                    let revertTo = Int64(server.store.snapshot.seq)
                    let steps: [(String, JSONValue)] = [
                        ("set", ["path": "/p/a", "value": 5]),
                        ("increment", ["path": "/q", "by": 3]),
                        ("set", ["path": "/r", "value": ["s": ["t": 9, "u": 1]]]),
                        ("patch", [["op": "move", "from": "/p/b", "path": "/moved"], ["op": "remove", "path": "/list/0"]]),
                        ("merge", ["p": ["a": nil, "c": 3], "missing": ["x": "found"]]),
                        ("append", ["path": "/list", "value": 4]),
                        ("remove", ["path": "/p"]),
                        ("set", ["path": "/other", "value": 1]),
                        ("@revert", ["to": .int(revertTo)]),
                        ("patch", [["op": "copy", "from": "/r", "path": "/r2"], ["op": "replace", "path": "/r/s", "value": ["t": 7]]]),
                    ]
                    for (type, payload) in steps {
                        try await dispatch(type, payload)
                        states[Int64(server.store.snapshot.seq)] = server.store.snapshot.state
                    }
                    let final = server.store.snapshot.state
                    for (index, watcher) in watchers.enumerated() {
                        let path = try JSONPointer(paths[index])
                        let finalValue = final.value(at: path) ?? .null
                        var value = starts[index].value
                        var lastSeq = starts[index].seq
                        while value != finalValue {
                            let update = try await watcher.receive()
                            let seq = try #require(update["params"]?["seq"]?.intValue)
                            #expect(seq > lastSeq, "\(path): updates in seq order")
                            lastSeq = seq
                            if index % 2 == 0 {
                                value = try #require(update["params"]?["value"])
                            } else {
                                try JSONPatch(try #require(update["params"]?["patch"])).apply(to: &value)
                            }
                            let expected = try #require(states[seq], "\(path): an update at seq \(seq), which no dispatch answered").value(at: path) ?? .null
                            #expect(value == expected, "\(path) at seq \(seq)")
                        }
                    }
                    // The path no action touched got no update at all.
                    let quiet = try #require(paths.firstIndex(of: "/quiet"))
                    _ = try await watchers[quiet].request(2, "hello", [:])
                    #expect(watchers[quiet].updatesSoFar().isEmpty)
                }
            }
        }
    }

    /// Far more actions than the feed keeps go by while a subscriber reads nothing: it then gets
    /// every one, in order, first from the log, then from the feed again.
    @Test func anActionsSubscriberFarBehindCatchesUpFromTheLogInOrder() async throws {
        try await ServerHarness.run { server throws in
            try await server.connect { stalled throws in
                _ = try await stalled.request(1, "subscribe", ["mode": "actions"])
                try await server.connect { reader throws in
                    _ = try await reader.request(1, "subscribe", ["mode": "actions"])
                    try await server.connect { writer throws in
                        for batch in 0..<26 {
                            let actions = (0..<1000).map { i -> JSONValue in
                                ["type": "set", "payload": ["path": "/n", "value": .int(Int64(batch * 1000 + i))]]
                            }
                            _ = try await writer.request(batch, "dispatch", ["actions": .array(actions)])
                        }
                    }
                    // The live reader keeps up meanwhile.
                    var seen: Int64 = 0
                    while seen < 26_000 {
                        seen = try #require(try await reader.receive()["params"]?["seq"]?.intValue)
                    }
                }
                var seqs: [Int64] = []
                while seqs.count < 26_000 {
                    let update = try await stalled.receive()
                    let actions = try #require(update["params"]?["actions"]?.arrayValue)
                    #expect(actions.count <= 500)
                    seqs += actions.compactMap { $0["seq"]?.intValue }
                }
                #expect(seqs == Array(1...26_000))
            }
        }
    }

    /// Shared subscriptions (`shared: true`) get the lines of their feed: the same for every
    /// subscriber, naming the feed instead of a subscription, each still exactly what the mode
    /// promises (every action once in order, from `since` too; values and patches that lead to
    /// the final value).
    @Test func sharedFeedsSendEverySubscriberTheirLinesNamingTheFeed() async throws {
        try await ServerHarness.run { server throws in
            try await dispatch(server, values: 0..<5)  // seqs 1...5, /n = 4
            try await withConnections(server, 4) { watchers throws in
                let subscriptions: [JSONValue] = [
                    ["mode": "actions", "shared": true],
                    ["mode": "actions", "shared": true, "since": 2],
                    ["mode": "value", "path": "/n", "shared": true],
                    ["mode": "patch", "path": "/n", "shared": true],
                ]
                var starts: [(seq: Int64, value: JSONValue)] = []
                var ids: [JSONValue] = []
                for (watcher, params) in zip(watchers, subscriptions) {
                    let answer = try await watcher.request(1, "subscribe", params)
                    let result = try #require(answer["result"])
                    #expect(result["feed"] == .string(params["mode"] == "actions" ? "actions" : "\(params["mode"]!.stringValue!):/n"))
                    starts.append((try #require(result["seq"]?.intValue), result["value"] ?? .null))
                    ids.append(try #require(result["subscription"]))
                }
                // One shared subscription per feed and connection; another mode's feed, or updates
                // of its own, are fine beside it.
                let again = try await watchers[0].request(2, "subscribe", ["mode": "actions", "shared": true, "path": "/other"])
                #expect(again["error"]?["code"] == -32602)
                #expect(again["error"]?["message"]?.stringValue?.contains("\"actions\"") == true)
                let own = try await watchers[3].request(2, "subscribe", ["mode": "value", "path": "/n"])
                let ownID = try #require(own["result"]?["subscription"])

                async let first: Void = dispatch(server, values: 100..<140)
                async let second: Void = dispatch(server, values: 200..<220, path: "/other")
                _ = try await (first, second)
                let final = Int64(server.store.snapshot.seq)
                let finalValue = try #require(server.store.snapshot.state["n"])

                for index in 0..<2 {
                    var seqs: [Int64] = []
                    while seqs.last ?? starts[index].seq < final {
                        let params = try #require(try await watchers[index].receive()["params"])
                        #expect(params["feed"] == "actions" && params["subscription"] == nil)
                        seqs += try #require(params["actions"]?.arrayValue).compactMap { $0["seq"]?.intValue }
                        #expect(params["seq"]?.intValue == seqs.last)
                    }
                    #expect(seqs == Array((starts[index].seq + 1)...final), "every action once, in order")
                }
                var value = starts[2].value
                var lastSeq = starts[2].seq
                while value != finalValue {
                    let params = try #require(try await watchers[2].receive()["params"])
                    #expect(params["feed"] == "value:/n" && params["subscription"] == nil)
                    let seq = try #require(params["seq"]?.intValue)
                    #expect(seq > lastSeq)
                    lastSeq = seq
                    value = try #require(params["value"])
                }
                var patched = starts[3].value
                var ownValue = starts[3].value
                while patched != finalValue || ownValue != finalValue {
                    let params = try #require(try await watchers[3].receive()["params"])
                    if params["feed"] == "patch:/n" {
                        #expect(params["subscription"] == nil)
                        try JSONPatch(try #require(params["patch"])).apply(to: &patched)
                    } else {
                        #expect(params["subscription"] == ownID && params["feed"] == nil)
                        ownValue = try #require(params["value"])
                    }
                }
                // Ended, the feed's slot on the connection is free again.
                let ended = try await watchers[0].request(3, "unsubscribe", ["subscription": ids[0]])
                #expect(ended["result"] == [:])
                let anew = try await watchers[0].request(4, "subscribe", ["mode": "actions", "shared": true])
                #expect(anew["result"]?["feed"] == "actions")
            }
        }
    }
}
