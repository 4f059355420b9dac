import Foundation
import ReelCore
import ReelExamples
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// The first step of a take-over: a new version's reducers fold a data directory while a real
/// daemon of the old version (`reel-rpg serve`, another process) keeps dispatching into it, then
/// follow its commits; the store the new version opens once the old one has stopped goes on from
/// that fold and replays only what came after it.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct FoldBesideTests {
    /// `count` attacks and hits, as one batch through the daemon's socket.
    static func dispatch(_ count: Int, to socket: String, seed: Int) async throws {
        let lines = (0..<count).map { index in
            let enemy = (index + seed) % 3 == 0 ? "slime" : "goblin"
            let type = (index + seed) % 4 == 0 ? "rpg/attackCharacter" : "rpg/attackEnemy"
            return #"{"type":"\#(type)","payload":{"enemyId":"\#(enemy)"}}"#
        }
        let run = try await runProgram("reel-rpg", ["dispatch", "-", "--batch", "--socket", socket], input: lines.joined(separator: "\n") + "\n")
        #expect(run.status == 0, "\(run.errors)")
    }

    @Test func theFoldFollowsTheServingDaemonAndTheStoreGoesOnFromIt() async throws {
        let directory = try TemporaryDirectory("reel-fold-beside")
        let data = directory.sub("data")
        let old = SpawnedDaemon(executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: directory.sub("s.sock"))
        try await old.start()
        try await Self.dispatch(40, to: old.socketPath, seed: 0)

        // The rules of version 2 fold beside version 1's daemon, which goes on dispatching.
        // (The daemon's journal moves its actions into LMDB a few milliseconds after acknowledging
        // them: the fold may find fewer at first, and follows.)
        let beside = try FoldBeside(path: data, definition: RPGApp.definition(rules: 2))
        try await waitUntil("the daemon's first actions reach LMDB") {
            try beside.catchUp()
            return beside.folded.seq == 40
        }
        #expect(beside.replayed == 40)
        try await Self.dispatch(25, to: old.socketPath, seed: 1)
        try await waitUntil("the fold follows the daemon's commits") {
            try beside.catchUp()
            return beside.folded.seq == 65
        }
        #expect(beside.replayed == 65)
        try await Self.dispatch(10, to: old.socketPath, seed: 2)
        #expect(try await old.stop() == 0)
        let folded = beside.finish()
        #expect(folded.seq <= 75)

        let store = try Store(path: data, definition: RPGApp.definition(rules: 2), continuing: folded)
        #expect(store.snapshot.seq == 75)
        #expect(store.statistics.replayedAtOpen == Int(75 - folded.seq))
        #expect(store.statistics.restoredFromCheckpoint == nil)
        // What a replay of the whole log under version 2 gives.
        var fresh = RPGApp.definition(rules: 2)
        fresh.identity.version = "2-from-scratch"
        let replayed = try Timeline(directory: store.directory, definition: fresh).reconstruct(at: 75)
        #expect(replayed.replayed == 75)
        #expect(store.snapshot.state == replayed.state)
        await store.close()
    }

    @Test func aHistoryTheNewVersionCannotReadIsRefusedBeforeAnythingIsFolded() async throws {
        let directory = try TemporaryDirectory("reel-fold-beside")
        let data = directory.sub("data")
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "3"
        let three = SpawnedDaemon(
            executable: "reel-rpg", prefix: ["serve"], dataDirectory: data, socketPath: directory.sub("s.sock"), environment: environment
        )
        try await three.start()
        let run = try await runProgram(
            "reel-rpg", ["dispatch", "rpg/attackEnemy", #"{"target":"slime"}"#, "--socket", three.socketPath], environment: environment
        )
        #expect(run.status == 0, "\(run.errors)")
        #expect(try await three.stop() == 0)
        do {
            _ = try FoldBeside(path: data, definition: RPGApp.definition(rules: 1))
            Issue.record("the rules of version 1 folded a log with version 2 attacks")
        } catch {
            #expect(error.code == .unreadableHistory)
        }
    }
}
