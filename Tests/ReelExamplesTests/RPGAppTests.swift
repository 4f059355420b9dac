import ReelCore
import ReelExamples
import ReelJSON
import ReelStore
import ReelTestSupport
import Testing

@Suite(.heavy) struct RPGAppTests {
    @Test func attacksUseTheAttackersAttack() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: RPGApp.definition)
        try await store.dispatch(try Action(RPGApp.AttackEnemy(enemyId: "slime")))
        #expect(store.snapshot.state.enemies[0].hp == 12 - 7)
        try await store.dispatch(try Action(RPGApp.AttackCharacter(enemyId: "goblin")))
        #expect(store.snapshot.state.character.hp == 30 - 5)
        // The middleware's damage is in the log, so replay does not depend on the attacker.
        let logged = try #require(try store.timeline.history(from: 2, limit: 1).actions.first)
        #expect(logged.payload["damage"] == 5)
        await store.close()
    }

    @Test func unknownEnemiesAreRefused() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: RPGApp.definition)
        for action in [try Action(RPGApp.AttackEnemy(enemyId: "dragon")), try Action(RPGApp.AttackCharacter(enemyId: "dragon"))] {
            do {
                try await store.dispatch(action)
                Issue.record("attacked a dragon that is not there")
            } catch {
                #expect(error.code == .rejected)
            }
        }
        #expect(store.snapshot.state == RPGApp.initialState)
        await store.close()
    }

    @Test func setSaveDataReplacesCharacterAndEnemies() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: RPGApp.definition)
        let hero = RPGApp.Character(name: "Knight", hp: 50, attack: 9)
        let enemies = [RPGApp.Enemy(id: "bat", name: "Bat", hp: 4, attack: 1)]
        try await store.dispatch(try Action(RPGApp.AttackEnemy(enemyId: "slime")))
        try await store.dispatch(try Action(RPGApp.SetSaveData(slot: "slot-2", character: hero, enemies: enemies)))
        #expect(store.snapshot.state == RPGApp.State(character: hero, enemies: enemies, saveData: .init(slot: "slot-2", loads: 1)))
        try await store.dispatch(try Action(RPGApp.AttackEnemy(enemyId: "bat")))
        #expect(store.snapshot.state.enemies[0].hp == 4 - 9)
        await store.close()
    }

    @Test func findsWhenTheCharacterFirstDropsBelowZero() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: RPGApp.definition, options: StoreOptions(checkpointEvery: 3))
        for _ in 0..<7 { try await store.dispatch(try Action(RPGApp.AttackCharacter(enemyId: "goblin"))) }
        // 30 - 5·6 = 0, 30 - 5·7 = -5: the 7th attack is the first below zero.
        let latest = store.snapshot.seq
        let first = try (1...latest).first { try store.timeline.state(at: $0).character.hp < 0 }
        #expect(first == 7)
        let withoutIt = try store.timeline.replay(to: latest, skipping: [7])
        #expect(withoutIt.value["character"]?["hp"] == 0)
        await store.close()
    }
}
