import Foundation
import ReelClient
import ReelExamples
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// A typed dispatch names its payload's version, so a client built against an older shape keeps
/// working when the daemon reads a newer one: the daemon upcasts.
@Suite(.timeLimit(.minutes(1)), .heavy) struct VersionedDispatchTests {
    @Test func aClientOfTheOldShapeAndOneOfTheNewBothReachTheNewerDaemon() async throws {
        let directory = try TemporaryDirectory("reel-versioned")
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "3"
        let daemon = SpawnedDaemon(
            executable: "reel-rpg", prefix: ["serve"], dataDirectory: directory.sub("data"), socketPath: directory.sub("rpg.sock"),
            environment: environment
        )
        try await daemon.start()
        let client = try await ReelClient.connect(socketPath: daemon.socketPath)
        // `AttackEnemy` is version 1 of the payload (`enemyId`); the daemon reads version 2.
        let old = try await client.dispatch(RPGApp.AttackEnemy(enemyId: "slime"))
        let new = try await client.dispatch(RPGApp.AttackEnemyV2(target: "goblin"))
        #expect([old.seq, new.seq] == [1, 2])
        let enemies = try await client.get(try JSONPointer("/enemies"))
        #expect(enemies.value.arrayValue?.map { $0["hp"] } == [5, 13])
        let page = try await client.history(from: 1)
        #expect(page.actions.map(\.version) == [2, 2])
        #expect(page.actions.map(\.payload) == [["target": "slime", "damage": 7], ["target": "goblin", "damage": 7]])
        await client.close()
        #expect(try await daemon.stop() == 0)
    }

    /// A daemon from before versions (no `dispatch.version` among its capabilities) refuses an
    /// action with `version`: a version 1 payload goes unnamed there, a later one is sent as it is.
    @Test func aDaemonWithoutVersionsGetsVersionOneUnnamed() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request)])
            case "dispatch": .send([ScriptedServer.result(request, ["seq": 1])])
            default: .close
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            try await client.dispatch(RPGApp.AttackEnemy(enemyId: "slime"))
            try await client.dispatch(RPGApp.AttackEnemyV2(target: "slime"))
        }
        await server.stop()
        #expect(server.received("dispatch").map { $0.params?["action"]?["version"] } == [nil, 2])
    }
}
