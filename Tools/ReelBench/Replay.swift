import Foundation
import Histogram
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

extension ReelBench {
    /// Builds a log of `logSize` patch actions, then measures a full replay of it and the latency
    /// of the state at random seqs (nearest checkpoint, then replay).
    func replayAndStateAtSeq() async throws {
        let path = try scratch("replay")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ContinuousClock()

        // Fill through the real store (batches of 1,000 actions; no fsync: setup, not a figure).
        let fillStart = clock.now
        let options = StoreOptions(checkpointEvery: checkpointEvery, storage: .init(durable: false))
        let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
        var next = 1
        while next <= logSize {
            let count = min(1_000, logSize - next + 1)
            try await store.dispatch(batch: (next..<(next + count)).map(Self.patchAction))
            next += count
        }
        await store.close()
        let headers = try store.directory.checkpointHeaders()
        print(String(format: "setup: %d actions logged in %.1f s, %d checkpoints", logSize, (clock.now - fillStart).seconds, headers.count))

        // Full replay with checkpoints out of the picture (another reducer version).
        var fromStart = StoreDefinition<JSONValue>.stock
        fromStart.identity.version = "bench-no-checkpoints"
        let replayTimeline = Timeline(directory: store.directory, definition: fromStart)
        let replayStart = clock.now
        let rebuilt = try replayTimeline.reconstruct(at: UInt64(logSize))
        let replaySeconds = (clock.now - replayStart).seconds
        precondition(rebuilt.replayed == logSize && rebuilt.refused.isEmpty, "replay did not fold every action")
        precondition(rebuilt.state == store.snapshot.state, "replay disagrees with the store")
        print(String(format: "replay (stock reducer, patch actions): %10.0f actions/s  (%d actions in %.3f s)",
                     Double(logSize) / replaySeconds, logSize, replaySeconds))

        // Where replay time goes: reading and decoding the log alone, then the same on one thread.
        var decoded = 0
        let decodeStart = clock.now
        try store.directory.forEachEnvelope(from: 1) { _ in decoded += 1; return true }
        let decodeSeconds = (clock.now - decodeStart).seconds
        var state = JSONValue.object([:])
        let reducer = JSONDocumentReducer()
        let serialStart = clock.now
        try store.directory.forEachEnvelope(from: 1) { envelope in
            try reducer.reduce(into: &state, action: envelope)
            return true
        }
        let serialSeconds = (clock.now - serialStart).seconds
        print(String(format: "  of which: read+decode alone %10.0f actions/s; read+decode+reduce on one thread %10.0f actions/s",
                     Double(decoded) / decodeSeconds, Double(logSize) / serialSeconds))

        // State at random seqs, using the checkpoints.
        let timeline = store.timeline
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<samples {
            let seq = UInt64.random(in: 0...UInt64(logSize), using: &generator)
            let start = clock.now
            _ = try timeline.state(at: seq)
            let micros = (clock.now - start).seconds * 1e6
            _ = histogram.record(UInt64(micros.rounded()))
        }
        print(String(
            format: "state at a random seq (%d samples): p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms",
            samples, Double(histogram.valueAtPercentile(50)) / 1000, Double(histogram.valueAtPercentile(90)) / 1000,
            Double(histogram.valueAtPercentile(99)) / 1000, Double(histogram.max) / 1000
        ))
    }
}
