import Foundation
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// `reeld --take-over` against the real binary: a second daemon folds the data directory beside
/// the one serving it, receives its socket and goes on serving, while clients dispatch and
/// subscribe through the same socket path all along.
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy(long: true)) struct TakeOverTests {
    @Test(.timeLimit(.minutes(2)))
    func aTakeOverUnderLoadLosesRepeatsAndSkipsNothing() async throws {
        let dir = try TemporaryDirectory("reel-take-over")
        let old = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--checkpoint-every", "50"])
        try await old.start()
        let writers = 8, each = 60
        let total = UInt64(writers * each + 1)  // a set, then the increments: n = seq - 1 at every seq
        // Subscribed before anything is dispatched: actions mode must see 1...total.
        let watcher = try await ReelClient.connect(socketPath: old.socketPath, configuration: .forTests)
        let collectors = ModeCollectors(
            actions: try await watcher.subscribe(mode: .actions), values: try await watcher.subscribe(try JSONPointer("/n"), mode: .value),
            patches: try await watcher.subscribe(.root, mode: .patch), through: total
        )
        let client = try await ReelClient.connect(socketPath: old.socketPath, configuration: .forTests)
        try await client.dispatch(Stock.set("/n", 0))

        let load = KeyedWriters(client: client, writers: writers, each: each)
        await load.waitForAcknowledgements(writers * each / 4)
        // The newcomer starts beside it: the socket already listens (the old daemon's).
        let new = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--take-over"])
        try await new.start()
        // The old daemon stops by itself once it has handed over.
        #expect(try await old.stop(signal: 0, within: .seconds(30)) == 0)

        _ = try await withDeadline(.seconds(60), "every dispatch to be answered") { try await load.outcome.value }
        #expect(try await client.get(try JSONPointer("/n")).value == .int(Int64(writers * each)), "each dispatch applied exactly once")
        #expect(try await client.history(from: 1, limit: 1000).actions.count == Int(total))
        #expect(try await collectors.actionSeqs.value == Array(1...total), "actions mode: every seq exactly once, in order")
        let states = try await collectors.patchedStates.value
        #expect(states.allSatisfy { $0.value == ["n": .int(Int64($0.seq) - 1)] }, "patch mode: each patched state is the one at its seq")
        #expect(try await collectors.valueUpdates.value.last?.value == .int(Int64(total) - 1))

        // The newcomer serves the socket path, and it is the only daemon there.
        let stats = try await client.call(Method.Stats.self, StatsParams())
        #expect(stats.seq == total)
        await watcher.close()
        await client.close()
        #expect(try await new.stop() == 0)
        #expect(!SpawnedDaemon.listens(dir.sub("reel.sock")), "the newcomer removes the socket's file when it stops")
    }
}

extension TakeOverTests {
    /// While the newcomer folds, the served daemon's `stats` says how far it got; a newcomer that
    /// dies before its hand-over leaves the old daemon serving.
    @Test(.timeLimit(.minutes(1)))
    func theServedDaemonShowsTheFoldsProgressAndServesOnWhenTheNewcomerDies() async throws {
        let dir = try TemporaryDirectory("reel-take-over")
        let old = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await old.start()
        let client = try await ReelClient.connect(socketPath: old.socketPath, configuration: .forTests)
        for n in 0..<20 { try await client.dispatch(Stock.set("/n", .int(Int64(n)))) }
        // The newcomer stops for good once level (as if stuck), before asking for the socket.
        let new = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--take-over"],
            environment: ["REEL_CRASH_POINT": "takeover.folded:hang"]
        )
        try await new.start()
        var report: TakeOverProgressReport?
        try await waitUntil("the fold's report in the served daemon's stats") {
            report = try await client.call(Method.Stats.self, StatsParams()).takeOver
            return report != nil
        }
        #expect(report == TakeOverProgressReport(reducer: "reel.json@1", folded: 20, latest: 20, remainingSeconds: 0))
        let shown = try await runProgram("reel", ["stats", "--socket", old.socketPath])
        #expect(shown.output.contains("take-over") && shown.output.contains("reel.json@1 preparing: folded seq 20 of 20, level"), "\(shown.output)")
        _ = try await new.stop(signal: SIGKILL)
        try await client.dispatch(Stock.set("/n", 20))
        #expect(try await client.get(try JSONPointer("/n")).value == 20)
        await client.close()
        #expect(try await old.stop() == 0)
    }
}
