import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelTestSupport
import Testing

/// `history` by path and `blame` through the real `reeld` and `reel`: which actions changed a
/// value and which action last changed each leaf, live and offline alike.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ChangedHistoryTests {
    static let actions: [(type: String, payload: String)] = [
        ("set", #"{"path":"/cart","value":{"items":[{"sku":"a","price":5}],"total":5}}"#),  // 1
        ("set", #"{"path":"/user","value":"ada"}"#),  // 2
        ("set", #"{"path":"/cart/items/0/price","value":7}"#),  // 3
        ("increment", #"{"path":"/visits"}"#),  // 4
        ("merge", #"{"cart":{"total":7}}"#),  // 5
        ("set", #"{"path":"/cart/items/0/price","value":7}"#),  // 6: the same value, no change
        ("patch", #"[{"op":"remove","path":"/cart/items/0"}]"#),  // 7
        ("set", #"{"path":"/user","value":"grace"}"#),  // 8
    ]

    static func seqs(_ output: String) throws -> [Int64] {
        try output.split(separator: "\n").map { try JSONValue(parsing: String($0))["seq"]?.intValue ?? -1 }
    }

    /// With the change index, and with `--change-index off` (every answer by replaying): the same.
    @Test(arguments: [true, false])
    func changesAndBlameLiveAndOffline(index: Bool) async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: index ? [] : ["--change-index", "off"]
        )
        try await daemon.start()
        let live = ["--socket", daemon.socketPath]
        for action in Self.actions {
            let sent = try await runProgram("reel", ["dispatch", action.type, action.payload] + live)
            #expect(sent.status == 0, "\(sent.errors)")
        }
        // Each command with its expected seqs; run live, then offline below.
        let logs: [([String], [Int64])] = [
            (["--changed", "/cart/items/0/price"], [1, 3, 7]),
            (["--changed", "/cart/items/0/price", "--desc"], [7, 3, 1]),
            (["--changed", "/cart"], [1, 3, 5, 7]),
            (["--changed", "/cart/total"], [1, 5]),
            (["--changed", "/user", "--desc", "--limit", "1"], [8]),
            (["--changed", ""], [1, 2, 3, 4, 5, 7, 8]),
            (["--changed", "/cart", "--type", "set"], [1, 3]),
            (["--changed", "/nothing"], []),
        ]
        var liveOutputs: [String] = []
        for (arguments, expected) in logs {
            let listed = try await runProgram("reel", ["log", "--json"] + arguments + live)
            #expect(listed.status == 0, "\(arguments): \(listed.errors)")
            #expect(try Self.seqs(listed.output) == expected, "\(arguments)")
            liveOutputs.append(listed.output)
        }
        let none = try await runProgram("reel", ["log", "--changed", "/nothing"] + live)
        #expect(none.errors.contains("no action that changed /nothing in seqs 1…8"), "\(none.errors)")
        let follow = try await runProgram("reel", ["log", "--changed", "/cart", "--follow"] + live)
        #expect(follow.status == 64)

        let blames: [[String]] = [["/cart", "--json"], ["--at", "3", "--json"], ["--at", "3"], ["/user"]]
        var blamed: [String] = []
        for arguments in blames {
            let answer = try await runProgram("reel", ["blame"] + arguments + live)
            #expect(answer.status == 0, "\(arguments): \(answer.errors)")
            blamed.append(answer.output)
        }
        let cart = try blamed[0].split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        #expect(cart.map { $0["path"] } == ["/cart/items", "/cart/total"])
        #expect(cart.map { $0["seq"] } == [7, 5])
        #expect(cart.map { $0["type"] } == ["patch", "merge"])
        #expect(cart.map { $0["value"] } == [[], 7])
        #expect(cart[0]["peer"]?["uid"] == .int(Int64(getuid())))
        let atThree = try blamed[1].split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        #expect(atThree.map { $0["path"]?.stringValue } == ["/cart/items/0/price", "/cart/items/0/sku", "/cart/total", "/user"])
        #expect(atThree.map { $0["seq"] } == [3, 1, 1, 2])
        // Aligned like git blame: SEQ TIME TYPE PEER PATH VALUE, a row per leaf.
        let rows = blamed[2].split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.first == ["SEQ", "TIME", "TYPE", "PEER", "PATH", "VALUE"], "\(blamed[2])")
        #expect(rows.dropFirst().map { [$0[0], $0[2], $0[$0.count - 2], $0[$0.count - 1]] } == [
            ["3", "set", "/cart/items/0/price", "7"], ["1", "set", "/cart/items/0/sku", "\"a\""], ["1", "set", "/cart/total", "5"],
            ["2", "set", "/user", "\"ada\""],
        ], "\(blamed[2])")
        let missing = try await runProgram("reel", ["blame", "/nothing"] + live)
        #expect(missing.status != 0)
        #expect(missing.errors.contains("nothing at /nothing"), "\(missing.errors)")
        // `stats` says how far the index goes and what it weighs (the journal's last commits may
        // not be in it yet while the daemon runs).
        let liveStats = try JSONValue(parsing: try await runProgram("reel", ["stats", "--json"] + live).output)
        if index {
            #expect((liveStats["changeIndexThrough"]?.intValue ?? -1) <= 8)
            #expect((liveStats["changeIndexBytes"]?.intValue ?? 0) > 0)
        } else {
            #expect(liveStats["changeIndexThrough"] == nil)
        }

        #expect(try await daemon.stop() == 0)
        do {
            let data = try DataDirectory(path: dir.sub("data"), reducerName: nil, options: .init(readOnly: true))
            #expect(try data.changeIndexStatus()?.indexedThrough == (index ? 8 : nil), "the index kept only when on")
        }
        let offline = ["--data-dir", dir.sub("data")]
        let offlineStats = try await runProgram("reel", ["stats", "--json"] + offline)
        #expect(try JSONValue(parsing: offlineStats.output)["changeIndexThrough"] == (index ? 8 : nil), "\(offlineStats.errors)")
        if index {
            let table = try await runProgram("reel", ["stats"] + offline)
            #expect(table.output.contains("change index") && table.output.contains("up to date"), "\(table.output)")
        }
        for ((arguments, _), output) in zip(logs, liveOutputs) {
            let listed = try await runProgram("reel", ["log", "--json"] + arguments + offline)
            #expect(listed.output == output, "offline \(arguments): \(listed.errors)")
        }
        for (arguments, output) in zip(blames, blamed) {
            let answer = try await runProgram("reel", ["blame"] + arguments + offline)
            #expect(answer.output == output, "offline blame \(arguments): \(answer.errors)")
        }
    }
}
