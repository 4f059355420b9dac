import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

extension ReelBench {
    /// Dispatch latency as the state grows: a durable store whose state has `keys` members at its
    /// root (about 60 bytes of JSON each), one `set` at a time, against the same store nearly
    /// empty. Then what a checkpoint of that state costs (encoding, size) and what loading it costs.
    func largeState() async throws {
        for keys in [1_000, largeStateKeys / 10, largeStateKeys] {
            try await largeState(keys: keys)
        }
    }

    private func largeState(keys: Int) async throws {
        let path = try scratch("large-state")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ContinuousClock()

        // Setup without fsync, in merges of 1,000 members, and no checkpoint (until the last
        // step below takes one while dispatches go on).
        let fillStart = clock.now
        var fillOptions = StoreOptions(checkpointEvery: 0, storage: .init(durable: false))
        fillOptions.checkpointAtShutdown = false
        do {
            let store = try Store(path: path, definition: .stock, options: fillOptions, logger: Self.quietLogger)
            var next = 0
            while next < keys {
                let count = min(1_000, keys - next)
                var members: JSONObject = [:]
                for i in next..<(next + count) {
                    members["k\(i)"] = ["name": .string("user \(i)"), "visits": .int(Int64(i)), "active": true]
                }
                try await store.dispatch(Action(type: "merge", payload: .object(members)))
                next += count
            }
            await store.close()
        }
        let fillSeconds = (clock.now - fillStart).seconds

        // Durable dispatches, one at a time, on the store reopened with the daemon's defaults; then
        // a checkpoint of the state: JSON value, binary encoding and hash, as the encoder thread does.
        // (In a scope of its own: the store must be gone before the directory is opened again.)
        let (latency, opening, checkpoint, encodeSeconds, loadSeconds) = try await {
            let openStart = clock.now
            var options = StoreOptions()
            options.checkpointAtShutdown = false
            let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
            let openSeconds = (clock.now - openStart).seconds
            let firstStart = clock.now
            try await store.dispatch(Action(type: "set", payload: ["path": "/k0/visits", "value": .int(0)]))
            let firstSeconds = (clock.now - firstStart).seconds
            let latency = try await timedSets(on: store, keys: keys)
            let state = store.snapshot.state
            let encodeStart = clock.now
            let checkpoint = Checkpoint(seq: store.snapshot.seq, reducer: StoreDefinition<JSONValue>.stock.identity, time: .now(), state: state)
            let encodeSeconds = (clock.now - encodeStart).seconds
            let loadStart = clock.now
            let loaded = try checkpoint.state(checkingHash: true)
            let loadSeconds = (clock.now - loadStart).seconds
            precondition(loaded == state, "the checkpoint does not load back as the state")
            await store.close()
            return (latency, (open: openSeconds, first: firstSeconds), checkpoint, encodeSeconds, loadSeconds)
        }()

        // The same while the store takes its first checkpoint, due at once on opening (the log has
        // more than 50 actions and no checkpoint), going on until it is written: encoded beside the
        // writer from the published copy, then committed to LMDB by the journal's applier while
        // the journal syncs each dispatch on the same disk.
        var checkpointing = StoreOptions(checkpointEvery: 50)
        checkpointing.checkpointEveryBytes = 0
        let reopened = try Store(path: path, definition: .stock, options: checkpointing, logger: Self.quietLogger)
        let checkpointStart = clock.now
        let whileCheckpointing = try await timedSets(on: reopened, keys: keys, untilCheckpointsWritten: 1)
        let checkpointsWritten = reopened.statistics.checkpointsWritten
        let checkpointSeconds = (clock.now - checkpointStart).seconds
        await reopened.close()

        latency.report(
            String(format: "large state, %d keys: durable set, one at a time (%d)", keys, largeStateDispatches),
            note: String(
                format: "checkpoint %.1f MiB: encode %.0f ms, load %.0f ms; open %.0f ms, first dispatch %.1f ms; setup %.1f s",
                Double(checkpoint.stateBytes.count) / 1_048_576, encodeSeconds * 1000, loadSeconds * 1000,
                opening.open * 1000, opening.first * 1000, fillSeconds
            )
        )
        whileCheckpointing.report(
            String(format: "  the same while a checkpoint of it is encoded and written (%d)", whileCheckpointing.count),
            note: String(format: "%d written, %.1f s after it was asked for", checkpointsWritten, checkpointSeconds)
        )
    }

    /// `largeStateDispatches` durable `set`s of one member each, one at a time, and their latencies;
    /// more while the store has written fewer than `untilCheckpointsWritten` checkpoints (for up
    /// to a minute).
    private func timedSets(on store: Store<JSONValue>, keys: Int, untilCheckpointsWritten: Int = 0) async throws -> LatencyFigure {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        var latency = LatencyFigure()
        var generator = SystemRandomNumberGenerator()
        var done = 0
        while done < largeStateDispatches
            || (store.statistics.checkpointsWritten < untilCheckpointsWritten && clock.now < deadline)
        {
            done += 1
            let key = Int.random(in: 0..<keys, using: &generator)
            let start = clock.now
            try await store.dispatch(Action(type: "set", payload: ["path": .string("/k\(key)/visits"), "value": .int(1)]))
            latency.record(clock.now - start)
        }
        return latency
    }
}
