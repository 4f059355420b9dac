import Foundation
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// Reconnection and resumption against the real `reeld` binary, stopped with SIGTERM and started
/// again on the same data directory and socket.
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy(long: true)) struct DaemonRestartTests {
    @Test(.timeLimit(.minutes(2)))
    func everySubscriptionResumesAcrossARestartWithNoGapAndNoDuplicate() async throws {
        let dir = try TemporaryDirectory("reel-client-restart")
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let client = try await ReelClient.connect(socketPath: first.socketPath, configuration: .forTests)
        let counter = try JSONPointer("/n")

        // Subscribed before anything is dispatched: the actions subscription must see 1...total.
        let actions = try await client.subscribe(mode: .actions)
        let values = try await client.subscribe(counter, mode: .value)
        let patches = try await client.subscribe(.root, mode: .patch)
        let total: UInt64 = 61  // a set, then 60 increments: n = seq - 1 at every seq

        let collectors = ModeCollectors(actions: actions, values: values, patches: patches, through: total)

        // Every dispatch carries a key: one written just as the daemon goes away is sent again,
        // and the daemon answers a repeat of a committed one as a duplicate.
        func dispatch(_ action: Action) async throws {
            try await client.dispatch(action, idempotencyKey: ReelClient.makeIdempotencyKey())
        }
        try await dispatch(Stock.set("/n", 0))
        for _ in 0..<30 { try await dispatch(Stock.increment()) }

        #expect(try await first.stop(signal: SIGTERM) == 0)
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()

        // Another client changes the state too, possibly before this one is back: the resumed
        // subscriptions must bring those changes as well.
        try await withReelClient(socketPath: second.socketPath) { other in
            for _ in 0..<10 { try await other.dispatch(Stock.increment(), idempotencyKey: ReelClient.makeIdempotencyKey()) }
        }
        for _ in 0..<20 { try await dispatch(Stock.increment()) }

        #expect(try await collectors.actionSeqs.value == Array(1...total), "actions mode: every seq exactly once, in order")

        let updates = try await collectors.valueUpdates.value
        let seqs = updates.map(\.seq)
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "value mode: seqs strictly increase: \(seqs)")
        #expect(updates.allSatisfy { $0.value?.intValue == Int64($0.seq) - 1 }, "value mode: each value is the one at its seq")
        #expect(updates.last == SubscriptionUpdate(seq: total, change: .value(.int(Int64(total) - 1))))

        let states = try await collectors.patchedStates.value
        #expect(states.map(\.seq) == states.map(\.seq).sorted())
        #expect(states.allSatisfy { $0.value == ["n": .int(Int64($0.seq) - 1)] }, "patch mode: each patched state is the one at its seq")
        #expect(states.last?.value == (try await client.get().value))

        // The client greeted the new daemon: its hello saw the seq the first daemon stopped at,
        // or a later one when the other client got in first.
        #expect(client.serverHello.seq >= 31)
        #expect(try await client.history(from: 1, limit: 1000).actions.count == Int(total))
        await client.close()
        #expect(try await second.stop() == 0)
    }

    @Test(.timeLimit(.minutes(2)))
    func keyedDispatchesInFlightDuringARestartAreAppliedExactlyOnce() async throws {
        let dir = try TemporaryDirectory("reel-client-restart")
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let client = try await ReelClient.connect(socketPath: first.socketPath, configuration: .forTests)
        try await client.dispatch(Stock.set("/n", 0))

        let writers = 8, each = 40
        let load = KeyedWriters(client: client, writers: writers, each: each)
        // Stop the daemon in the middle of the writing, once a quarter of it is acknowledged.
        await load.waitForAcknowledgements(writers * each / 4)
        #expect(try await first.stop(signal: SIGTERM) == 0)
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()

        _ = try await withDeadline(.seconds(60), "every dispatch to be answered") { try await load.outcome.value }
        #expect(try await client.get(try JSONPointer("/n")).value == .int(Int64(writers * each)), "each dispatch applied exactly once")
        #expect(try await client.history(from: 1, limit: 1000).actions.count == writers * each + 1)
        await client.close()
        #expect(try await second.stop() == 0)
    }

    @Test(.timeLimit(.minutes(2)))
    func requestsMadeWhileTheDaemonIsDownWaitForItsReturn() async throws {
        let dir = try TemporaryDirectory("reel-client-restart")
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let client = try await ReelClient.connect(socketPath: first.socketPath, configuration: .forTests)
        try await client.dispatch(Stock.set("/n", 7))
        #expect(try await first.stop() == 0)

        // Made while nothing listens: the read waits for the next daemon rather than failing.
        let read = Task(executorPreference: TestThreads.shared) { try await client.get(try JSONPointer("/n")) }
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()
        let snapshot = try await withDeadline(.seconds(30), "the read") { try await read.value }
        #expect(snapshot == Snapshot(seq: 1, value: 7))
        #expect(client.isConnected)
        await client.close()
        #expect(try await second.stop() == 0)
    }
}
