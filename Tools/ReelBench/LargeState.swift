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

        // Setup without fsync, in merges of 1,000 members; checkpoints only at shutdown.
        let fillStart = clock.now
        let fillOptions = StoreOptions(checkpointEvery: 0, storage: .init(durable: false))
        do {
            let store = try Store(path: path, definition: .stock, options: fillOptions, logger: Self.quietLogger)
            var next = 0
            while next < keys {
                let count = min(1_000, keys - next)
                var members: [String: JSONValue] = [:]
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
        let (latency, openSeconds, checkpoint, encodeSeconds, loadSeconds) = try await {
            let openStart = clock.now
            let store = try Store(path: path, definition: .stock, logger: Self.quietLogger)
            let openSeconds = (clock.now - openStart).seconds
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
            return (latency, openSeconds, checkpoint, encodeSeconds, loadSeconds)
        }()

        // The same with a checkpoint of the state asked for after 50 dispatches: encoded beside
        // the writer, it holds the published copy, which the writer later takes back and must copy.
        var checkpointing = StoreOptions(checkpointEvery: 50)
        checkpointing.checkpointEveryBytes = 0
        let reopened = try Store(path: path, definition: .stock, options: checkpointing, logger: Self.quietLogger)
        let whileCheckpointing = try await timedSets(on: reopened, keys: keys)
        let checkpointsWritten = reopened.statistics.checkpointsWritten
        await reopened.close()

        latency.report(
            String(format: "large state, %d keys: durable set, one at a time (%d)", keys, largeStateDispatches),
            note: String(
                format: "checkpoint %.1f MiB: encode %.0f ms, load %.0f ms; open %.0f ms; setup %.1f s",
                Double(checkpoint.stateBytes.count) / 1_048_576, encodeSeconds * 1000, loadSeconds * 1000,
                openSeconds * 1000, fillSeconds
            )
        )
        whileCheckpointing.report(
            String(format: "  the same with a checkpoint of it asked for after 50 (%d)", largeStateDispatches),
            note: "\(checkpointsWritten) written while they ran"
        )
    }

    /// `largeStateDispatches` durable `set`s of one member each, one at a time, and their latencies.
    private func timedSets(on store: Store<JSONValue>, keys: Int) async throws -> LatencyFigure {
        let clock = ContinuousClock()
        var latency = LatencyFigure()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<largeStateDispatches {
            let key = Int.random(in: 0..<keys, using: &generator)
            let start = clock.now
            try await store.dispatch(Action(type: "set", payload: ["path": .string("/k\(key)/visits"), "value": .int(1)]))
            latency.record(clock.now - start)
        }
        return latency
    }
}
