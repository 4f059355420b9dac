import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// A take-over by another version of an app's reducers, through the real executables: the RPG's
/// rules of version 2 take `reel-rpg serve` over from version 1, then version 1 takes it back (a
/// rollback), going on from its own checkpoints, which version 2 left in place (but at a seq
/// where both checkpoint).
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct TakeOverVersionTests {
    static func rules(_ version: Int) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "\(version)"
        return environment
    }

    /// Attacks and hits, as one batch.
    static func dispatch(_ count: Int, to socket: String, rules: Int) async throws {
        let lines = (0..<count).map { index in
            index % 3 == 0 ? #"{"type":"rpg/attackCharacter","payload":{"enemyId":"slime"}}"# : #"{"type":"rpg/attackEnemy","payload":{"enemyId":"goblin"}}"#
        }
        let run = try await runProgram(
            "reel-rpg", ["dispatch", "-", "--batch", "--socket", socket], input: lines.joined(separator: "\n") + "\n", environment: Self.rules(rules)
        )
        #expect(run.status == 0, "\(run.errors)")
    }

    static func reducer(at socket: String) async throws -> String? {
        let stats = try await runProgram("reel-rpg", ["stats", "--json", "--socket", socket])
        return try JSONValue(parsing: stats.output)["reducer"]?.stringValue
    }

    static func checkpoints(_ data: String) async throws -> [(seq: Int64, version: String)] {
        let run = try await runProgram("reel-rpg", ["checkpoints", "--json", "--data-dir", data])
        return try run.output.split(separator: "\n").map { line in
            let checkpoint = try JSONValue(parsing: String(line))
            return (checkpoint["seq"]?.intValue ?? -1, checkpoint["reducer"]?["version"]?.stringValue ?? "")
        }
    }

    @Test func anotherVersionTakesOverAndTheFirstTakesItBackFromItsCheckpoints() async throws {
        let directory = try TemporaryDirectory("reel-take-over-rpg")
        let data = directory.sub("data"), socket = directory.sub("rpg.sock")
        func daemon(_ rules: Int, takingOver: Bool) -> SpawnedDaemon {
            SpawnedDaemon(
                executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: socket,
                extraArguments: ["--checkpoint-every", "5"] + (takingOver ? ["--take-over"] : []), environment: Self.rules(rules)
            )
        }
        let one = daemon(1, takingOver: false)
        try await one.start()
        try await Self.dispatch(6, to: socket, rules: 1)  // two commits: checkpoints at 6 and 12
        try await Self.dispatch(6, to: socket, rules: 1)
        #expect(try await Self.reducer(at: socket) == "rpg@1")

        let two = daemon(2, takingOver: true)
        try await two.start()
        #expect(try await one.stop(signal: 0, within: .seconds(30)) == 0, "version 1 hands over and exits")
        #expect(try await Self.reducer(at: socket) == "rpg@2")
        // Version 2's rules: the goblin's HP stops at zero, and further attacks on it are refused.
        let hp = try await runProgram("reel-rpg", ["get", "/enemies/1/hp", "--socket", socket])
        #expect(hp.output == "0\n", "\(hp.errors)")
        for seq in 13...18 {
            let hit = try await runProgram("reel-rpg", ["dispatch", "rpg/attackCharacter", #"{"enemyId":"slime"}"#, "--socket", socket])
            #expect(hit.output == "seq \(seq)\n", "\(hit.errors)")
        }
        // The change index was version 1's: version 2 does not wait for its own at a take-over,
        // and its answers replay instead. The goblin reached zero at seq 5 (7, 7, then 6 of 7).
        let stats = try await runProgram("reel-rpg", ["stats", "--json", "--socket", socket])
        #expect(try JSONValue(parsing: stats.output)["changeIndexThrough"] == 0, "\(stats.output)")
        let blame = try await runProgram("reel-rpg", ["blame", "/enemies/1/hp", "--json", "--socket", socket])
        #expect(try JSONValue(parsing: blame.output)["seq"] == 5, "\(blame.output) \(blame.errors)")
        let refused = try await runProgram("reel-rpg", ["dispatch", "rpg/attackEnemy", #"{"enemyId":"goblin"}"#, "--socket", socket])
        #expect(refused.status == 2)
        #expect(refused.errors.contains("goblin is already defeated"), "\(refused.errors)")

        // Version 1's checkpoints are still there beside version 2's (whose first one, at seq 12
        // where version 1 had one too, took that seq's place).
        let kept = try await Self.checkpoints(data)
        #expect(kept.contains { $0.version == "1" && $0.seq == 6 }, "\(kept)")
        #expect(kept.contains { $0.version == "2" && $0.seq >= 12 }, "\(kept)")

        let back = daemon(1, takingOver: true)
        try await back.start()
        #expect(try await two.stop(signal: 0, within: .seconds(30)) == 0, "version 2 hands over and exits")
        #expect(try await Self.reducer(at: socket) == "rpg@1")
        // What version 1 serves is its own fold of the whole log: the goblin's HP below zero again
        // (eight attacks of 7 on 20).
        let goblin = try await runProgram("reel-rpg", ["get", "/enemies/1/hp", "--socket", socket])
        #expect(goblin.output == "-36\n", "\(goblin.errors)")
        let verify = try await runProgram("reel-rpg", ["verify", "--data-dir", data], environment: Self.rules(1))
        #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
        #expect(try await back.stop() == 0)
    }
}
