import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// Versioned actions through the real executables: `reel-rpg` with the rules of version 3
/// (`REEL_RPG_RULES=3`: `rpg/attackEnemy` at payload version 2) serving a history that version 1
/// wrote, `check-history` before each deploy, and the rollback a daemon refuses.
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct CheckHistoryTests {
    static func rules(_ version: Int) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "\(version)"
        return environment
    }

    @Test func checkHistoryTellsEachDeployWhatItReadsAndTheDaemonRefusesARollback() async throws {
        let directory = try TemporaryDirectory("reel-versions")
        let data = directory.sub("data")
        // Version 1 writes attacks naming `enemyId`.
        do {
            let one = SpawnedDaemon(executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: directory.sub("one.sock"), environment: Self.rules(1))
            try await one.start()
            for enemy in ["goblin", "slime"] {
                let hit = try await runProgram("reel-rpg", ["dispatch", "rpg/attackEnemy", #"{"enemyId":"\#(enemy)"}"#, "--socket", one.socketPath], environment: Self.rules(1))
                #expect(hit.status == 0, "\(hit.errors)")
            }
            #expect(try await one.stop() == 0)
        }
        // Before deploying version 3: every action reads.
        let before = try await runProgram("reel-rpg", ["check-history", "--data-dir", data, "--json"], environment: Self.rules(3))
        #expect(before.status == 0, "\(before.errors)")
        let report = try JSONValue(parsing: before.output)
        #expect(report["readable"] == true)
        #expect(report["types"] == [[
            "type": "rpg/attackEnemy", "version": 1, "actions": 2, "failures": 0, "seqs": [], "reasons": [],
        ]])

        // Version 3 serves it; an old client's payload is accepted when it names its version.
        let three = SpawnedDaemon(executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: directory.sub("three.sock"), environment: Self.rules(3))
        try await three.start()
        let live = ["--socket", three.socketPath]
        let old = try await runProgram("reel-rpg", ["dispatch", "rpg/attackEnemy", #"{"enemyId":"goblin"}"#, "--action-version", "1"] + live, environment: Self.rules(3))
        #expect(old.output == "seq 3\n", "\(old.errors)")
        let unnamed = try await runProgram("reel-rpg", ["dispatch", "rpg/attackEnemy", #"{"enemyId":"goblin"}"#] + live, environment: Self.rules(3))
        #expect(unnamed.status == 2)
        #expect(unnamed.errors.contains(#"missing key "target""#), "\(unnamed.errors)")
        let logged = try await runProgram("reel-rpg", ["log", "--json"] + live, environment: Self.rules(3))
        let lines = logged.output.split(separator: "\n").map { try? JSONValue(parsing: String($0)) }
        #expect(lines.map { $0?["version"] } == [nil, nil, 2])
        #expect(lines.last??["payload"] == ["target": "goblin", "damage": 7])
        let described = try await runProgram("reel-rpg", ["describe", "--json"] + live, environment: Self.rules(3))
        let attack = try JSONValue(parsing: described.output)["actions"]?.arrayValue?.first { $0["type"] == "rpg/attackEnemy" }
        #expect(attack?["version"] == 2)
        #expect(attack?["versions"] == [1, 2])
        let help = try await runProgram("reel-rpg", ["dispatch", "--help"], environment: Self.rules(3))
        #expect(help.output.contains("rpg/attackEnemy {target: string, damage?: integer} (version 2; reads 1 too)"), "\(help.output)")
        let people = try await runProgram("reel-rpg", ["describe"] + live, environment: Self.rules(3))
        #expect(people.output.contains("rpg/attackEnemy (version 2; reads 1 too)"), "\(people.output)")
        #expect(try await three.stop() == 0)

        // Rolling back to version 1: check-history names what it cannot read, and its daemon
        // refuses to start rather than leave those attacks out.
        let back = try await runProgram("reel-rpg", ["check-history", "--data-dir", data], environment: Self.rules(1))
        #expect(back.status == 1)
        #expect(back.output.contains("rpg/attackEnemy version 2: 1 of 1 actions fail, at seqs 3"), "\(back.output)")
        #expect(back.output.contains("newer than this build reads (version 1)"))
        #expect(back.output.contains("rpg@1 cannot read 1 of 3 actions"))
        let rollback = SpawnedDaemon(executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: directory.sub("back.sock"), environment: Self.rules(1))
        do {
            try await rollback.start()
            Issue.record("the rules of version 1 served a log with version 2 attacks")
            try await rollback.stop()
        } catch let error as SpawnError {
            #expect("\(error)".contains("version 2 of 'rpg/attackEnemy' is newer than this build reads (version 1) (first at seq 3)"), "\(error)")
        }
        #expect(try await rollback.stop() == 65, "EX_DATAERR, as for another reducer's directory")
    }
}
