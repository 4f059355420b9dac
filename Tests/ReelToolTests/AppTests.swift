import Foundation
import ReelDaemon
import ReelExamples
import ReelJSON
import ReelTestSupport
import ReelTool
import Testing

/// An app with its own reducers (the RPG seed as `reel-rpg`) gets the daemon and every command
/// from one call in its main: served by `reel-rpg serve`, inspected with its own reducers.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct AppTests {
    @Test func theRPGAppServesAndTravelsInTimeWithItsOwnReducers() async throws {
        let directory = try TemporaryDirectory("reel-rpg")
        let daemon = SpawnedDaemon(
            executable: "reel-rpg", prefix: ["serve"], dataDirectory: directory.sub("data"), socketPath: directory.sub("rpg.sock"),
            extraArguments: ["--checkpoint-every", "4"]
        )
        try await daemon.start()
        let live = ["--socket", daemon.socketPath]
        let offline = ["--data-dir", daemon.dataDirectory]
        // The goblin hits for 5: the hero's 30 hp are gone after six hits (seq 6).
        for _ in 0..<7 {
            let hit = try await runProgram("reel-rpg", ["dispatch", "rpg/attackCharacter", #"{"enemyId":"goblin"}"#] + live)
            #expect(hit.status == 0, "\(hit.errors)")
        }
        let unknown = try await runProgram("reel-rpg", ["dispatch", "rpg/fly", "{}"] + live)
        #expect(unknown.status == 2)
        #expect(unknown.errors.contains("unknown action type 'rpg/fly'"), "\(unknown.errors)")

        let hp = try await runProgram("reel-rpg", ["get", "/character/hp"] + offline)
        #expect(hp.output == "-5\n", "\(hp.errors)")
        for arguments in [live, offline] {
            let bisect = try await runProgram("reel-rpg", ["bisect", "/character/hp <= 0", "--json"] + arguments)
            #expect(try JSONValue(parsing: bisect.output)["seq"] == 6, "\(bisect.errors)")
        }
        // The middleware wrote the damage into the logged action, so replay needs reducers only.
        let show = try await runProgram("reel-rpg", ["show", "6", "--json"] + offline)
        let shown = try JSONValue(parsing: show.output)
        #expect(shown["action"]?["payload"] == ["enemyId": "goblin", "damage": 5])
        #expect(shown["patch"] == [["op": "replace", "path": "/character/hp", "value": 0]])
        let whatIf = try await runProgram("reel-rpg", ["replay", "--skip", "6", "/character/hp"] + offline)
        #expect(whatIf.output == "0\n")
        // The checkpoint at seq 4 is encoded off the write path: waited for, not raced.
        try await waitUntil("the checkpoint at seq 4") {
            let list = try await runProgram("reel-rpg", ["checkpoints", "--json"] + live).output
            return list.split(separator: "\n").contains { (try? JSONValue(parsing: String($0)))?["seq"] == 4 }
        }
        let verify = try await runProgram("reel-rpg", ["verify"] + offline)
        #expect(verify.output == "verified 7 actions: 1 checkpoint(s) match\n", "\(verify.errors)")

        // The stock tool cannot fold RPG actions, and says so instead of replaying them wrongly.
        let stock = try await runProgram("reel", ["get"] + offline)
        #expect(stock.status == 2)
        #expect(stock.errors.contains("made for reducer 'rpg'"), "\(stock.errors)")
        #expect(try await daemon.stop() == 0)
    }

    @Test func serveShowsTheDaemonsHelpAndTheRootListsServe() async throws {
        let help = try await runProgram("reel-rpg", ["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("serve"))
        #expect(help.output.contains("rpg@1"))
        let stockHelp = try await runProgram("reel", ["--help"])
        #expect(!stockHelp.output.contains("serve "))
        #expect(stockHelp.output.contains("bisect"))
    }

    @Test func dispatchHelpListsTheProgramsActionTypesAndTheirShapes() async throws {
        let stock = try await runProgram("reel", ["dispatch", "--help"])
        #expect(stock.status == 0)
        for line in ["  increment {path: JSON Pointer, by?: number}", "  set {path: JSON Pointer, value: any JSON}", "  @revert {to: integer}"] {
            #expect(stock.output.contains(line), "no '\(line)' in \(stock.output)")
        }
        let rpg = try await runProgram("reel-rpg", ["dispatch", "--help"])
        #expect(rpg.output.contains("  rpg/attackEnemy {enemyId: string, damage?: integer}"), "\(rpg.output)")
        #expect(rpg.output.contains("The enemy loses the character's attack in HP."), "\(rpg.output)")
    }

    @Test func theToolsDefaultSocketIsTheDaemons() {
        #expect(DaemonConfiguration().socketPath == ReelTool.defaultSocketPath)
    }
}
