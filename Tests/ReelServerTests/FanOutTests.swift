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
}
