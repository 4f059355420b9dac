import Foundation
import ReelClient
import ReelExamples
import ReelJSON
import ReelTestSupport
import Testing

/// The README's client example, against `reel-rpg serve`: it must compile and do what it says.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ReadmeExampleTests {
    @Test func theReadmeClientExampleRuns() async throws {
        let directory = try TemporaryDirectory("reel-readme")
        let daemon = SpawnedDaemon(
            executable: "reel-rpg", prefix: ["serve"], dataDirectory: directory.sub("rpg-data"),
            socketPath: directory.sub("rpg-data/reel.sock")
        )
        try await daemon.start()

        // From here to `close()`, the README's code, with its socket path.
        let client = try await ReelClient.connect(socketPath: daemon.socketPath)
        let hit = try await client.dispatch(RPGApp.AttackCharacter(enemyId: "goblin"),
                                            idempotencyKey: ReelClient.makeIdempotencyKey())
        let hero = try await client.get(RPGApp.Character.self, path: try JSONPointer("/character"))
        print(hit.seq, hero.value.hp)
        var seen: [(UInt64, Int)] = []
        let hits = Task(executorPreference: TestThreads.shared) {
            for _ in 0..<5 { _ = try await client.dispatch(RPGApp.AttackCharacter(enemyId: "goblin")) }
        }
        for try await snapshot in try await client.states(RPGApp.Character.self, path: try JSONPointer("/character")) {
            seen.append((snapshot.seq, snapshot.value.hp))
            if snapshot.value.hp <= 0 { break }
        }
        try await hits.value
        await client.close()

        #expect(hit.seq == 1)
        #expect(hero.value.hp == 25)  // 30, less the goblin's 5 that the middleware logged
        #expect(seen.last?.1 == 0)
        #expect(seen.map(\.0) == seen.map(\.0).sorted())
        #expect(try await daemon.stop() == 0)
    }
}
