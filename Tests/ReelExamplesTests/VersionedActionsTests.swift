import Foundation
import ReelCore
import ReelExamples
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// Versioned actions through the real writer and real LMDB files: the RPG's rules of version 3
/// read `rpg/attackEnemy` at payload version 2 (`target`), upcasting version 1's (`enemyId`).
@Suite(.heavy) struct VersionedActionsTests {
    static let options = StoreOptions(checkpointEvery: 5, storage: .init(durable: false))

    static func attack(_ enemy: String) -> Action {
        Action(type: "rpg/attackEnemy", payload: ["enemyId": .string(enemy)])
    }

    /// A history of version 1 attacks and hits, written by the rules of version 1.
    static func writeVersionOneHistory(at path: String) async throws {
        let store = try Store(path: path, definition: RPGApp.definition(rules: 1), options: options)
        for enemy in ["goblin", "slime", "goblin"] {
            _ = try await store.dispatch(attack(enemy))
            _ = try await store.dispatch(Action(type: "rpg/attackCharacter", payload: ["enemyId": .string(enemy)]))
        }
        await store.close()
    }

    @Test func aNewVersionFoldsTheOldPayloadsUpcastAndLogsItsOwn() async throws {
        let directory = try TemporaryDirectory()
        try await Self.writeVersionOneHistory(at: directory.path)
        let final: RPGApp.State
        do {
            let store = try Store(path: directory.path, definition: RPGApp.definition(rules: 3), options: Self.options)
            // The same state as the rules of version 2, which read the old payloads as they are.
            let two = try Timeline(directory: store.directory, definition: RPGApp.definition(rules: 2)).state(at: 6)
            #expect(store.snapshot.state == two)
            #expect(store.snapshot.state.enemies.map(\.hp) == [12 - 7, 20 - 14])

            // An old client names version 1: upcast on the way in, logged at version 2.
            let upcast = try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["enemyId": "goblin"], version: 1))
            let current = try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["target": "slime"]))
            for (seq, enemy) in [(upcast.seq, "goblin"), (current.seq, "slime")] {
                let logged = try #require(try store.directory.envelope(at: seq))
                #expect(logged.version == 2)
                #expect(logged.payload == ["target": .string(enemy), "damage": 7])
            }
            #expect(store.snapshot.state.enemies.map(\.hp) == [0, 0])
            // Without a version, a payload is the latest's shape; a version the store does not
            // read is refused, and nothing is logged.
            await #expect(throws: StoreError.self) { try await store.dispatch(Self.attack("slime")) }
            do {
                _ = try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["target": "slime"], version: 3))
                Issue.record("version 3 was accepted")
            } catch {
                #expect(error.code == .rejected)
                #expect(error.message == "version 3 of 'rpg/attackEnemy' is newer than this build reads (version 2)")
            }
            #expect(store.snapshot.seq == 8)
            final = store.snapshot.state
            await store.close()
        }
        // Reopened by the same version from its checkpoints, and replayed from the start: the same.
        let again = try Store(path: directory.path, definition: RPGApp.definition(rules: 3), options: Self.options)
        #expect(again.snapshot.state == final)
        // Under another identity no checkpoint is trusted: every action is folded from the start.
        var fresh = RPGApp.definition(rules: 3)
        fresh.identity.version = "3-from-scratch"
        let replayed = try Timeline(directory: again.directory, definition: fresh).reconstruct(at: 8)
        #expect(replayed.checkpointSeq == nil)
        #expect(replayed.replayed == 8)
        #expect(replayed.refused.isEmpty)
        #expect(replayed.state == final)
        await again.close()
    }

    @Test func aBuildThatCannotReadTheLogRefusesToOpenItNamingTypeVersionAndSeq() async throws {
        let directory = try TemporaryDirectory()
        try await Self.writeVersionOneHistory(at: directory.path)
        do {
            let three = try Store(path: directory.path, definition: RPGApp.definition(rules: 3), options: Self.options)
            _ = try await three.dispatch(Action(type: "rpg/attackEnemy", payload: ["target": "goblin"]))
            await three.close()
        }

        // A rollback to the rules of version 1, which know no payload version 2.
        do {
            _ = try Store(path: directory.path, definition: RPGApp.definition(rules: 1), options: Self.options)
            Issue.record("the rules of version 1 opened a log with version 2 attacks")
        } catch {
            #expect(error.code == .unreadableHistory)
            #expect(error.message.contains("version 2 of 'rpg/attackEnemy' is newer than this build reads (version 1) (first at seq 7)"), "\(error.message)")
        }
        // A build whose reducers dropped a type.
        var dropped = RPGApp.definition(rules: 3)
        dropped.reducer = CombineReducers([dropped.reducer, Reduce<RPGApp.State>(["rpg/heal"]) { _, _ throws(ReducerError) in }])
        do {
            let healed = try Store(path: directory.path, definition: dropped, options: Self.options)
            _ = try await healed.dispatch(Action(type: "rpg/heal"))
            await healed.close()
        }
        do {
            _ = try Store(path: directory.path, definition: RPGApp.definition(rules: 3), options: Self.options)
            Issue.record("a build without 'rpg/heal' opened a log with it")
        } catch {
            #expect(error.code == .unreadableHistory)
            #expect(error.message.contains("no reducer handles 'rpg/heal' (first at seq 8)"), "\(error.message)")
        }
    }

    @Test func checkingTheHistoryNamesEachFailingTypeVersionAndItsSeqs() async throws {
        let directory = try TemporaryDirectory()
        try await Self.writeVersionOneHistory(at: directory.path)
        do {
            let three = try Store(path: directory.path, definition: RPGApp.definition(rules: 3), options: Self.options)
            _ = try await three.dispatch(Action(type: "rpg/attackEnemy", payload: ["target": "slime"]))
            await three.close()
        }
        let readOnly = try DataDirectory(path: directory.path, reducerName: nil, options: .init(readOnly: true))

        let byThree = try Timeline(directory: readOnly, definition: RPGApp.definition(rules: 3)).checkHistory()
        #expect(byThree.readable)
        #expect(byThree.actions == 7)
        #expect(byThree.entries.map { "\($0.type)@\($0.version):\($0.actions)" } == [
            "rpg/attackCharacter@1:3", "rpg/attackEnemy@1:3", "rpg/attackEnemy@2:1",
        ])

        let byOne = try Timeline(directory: readOnly, definition: RPGApp.definition(rules: 1)).checkHistory()
        #expect(!byOne.readable)
        let newer = try #require(byOne.entries.first { $0.version == 2 })
        #expect(newer.failures == 1)
        #expect(newer.seqs == [7])
        #expect(newer.problem == "version 2 of 'rpg/attackEnemy' is newer than this build reads (version 1)")
        let versionOne = byOne.entries.filter { $0.version == 1 }
        #expect(versionOne.count == 2 && versionOne.allSatisfy { $0.readable })

        // An upcaster that refuses some payloads fails exactly those actions, with its reason.
        var picky = RPGApp.definition(rules: 3)
        picky.reducer = CombineReducers([
            Scope(\RPGApp.State.enemies) {
                On(PickyAttack.self) { enemies, attack throws(ReducerError) in
                    try RPGApp.hit(&enemies, attack.target, damage: attack.damage, rules: 3)
                }
            }
        ] + [Reduce<RPGApp.State>(["rpg/attackCharacter"]) { _, _ throws(ReducerError) in }])
        let byPicky = try Timeline(directory: readOnly, definition: picky).checkHistory()
        let refused = try #require(byPicky.entries.first { $0.type == "rpg/attackEnemy" && $0.version == 1 })
        #expect(refused.seqs == [3])
        #expect(refused.reasons == ["slime cannot be upcast"])
        #expect(byPicky.entries.first { $0.version == 2 }?.readable == true)
    }

    /// `rpg/attackEnemy` version 2 whose upcaster refuses attacks on the slime.
    struct PickyAttack: ActionPayload {
        static let actionType = "rpg/attackEnemy"
        static let version = 2
        static let upcasters = [
            Upcaster(from: 1) { payload throws(ReducerError) in
                guard payload["enemyId"] != "slime" else { throw .rejected("slime cannot be upcast") }
                return ["target": payload["enemyId"] ?? .null, "damage": payload["damage"] ?? .null]
            }
        ]
        var target: String
        var damage: Int?
    }
}
