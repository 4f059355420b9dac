import Foundation
import Histogram
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

extension ReelBench {
    /// For each of the stock reducer's `patch`, `set` and `merge`: builds a log of `logSize` such
    /// actions and measures a full replay of it; on the `patch` log, also the latency of the state
    /// at random seqs (nearest checkpoint, then replay).
    func replayAndStateAtSeq() async throws {
        for (type, action) in [("patch", Self.patchAction), ("set", Self.setAction), ("merge", Self.mergeAction)] {
            try await replay(type, action, stateAtSeq: type == "patch")
        }
    }

    private func replay(_ type: String, _ action: @escaping (Int) -> Action, stateAtSeq: Bool) async throws {
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
            try await store.dispatch(batch: (next..<(next + count)).map(action))
            next += count
        }
        await store.close()
        let headers = try store.directory.checkpointHeaders()
        print(String(format: "setup: %d actions logged in %.1f s, %d checkpoints", logSize, (clock.now - fillStart).seconds, headers.count))

        // Full replay with checkpoints out of the picture (another reducer version), then reading
        // and decoding the log alone, then both on one thread: medians of `replayRuns` runs each,
        // alternating, since the machine is shared and a single run can be off by half.
        var fromStart = StoreDefinition<JSONValue>.stock
        fromStart.identity.version = "bench-no-checkpoints"
        let replayTimeline = Timeline(directory: store.directory, definition: fromStart)
        var replayRates: [Double] = [], replayCores: [Double] = [], decodeRates: [Double] = [], serialRates: [Double] = []
        for _ in 0..<replayRuns {
            let replayStart = clock.now
            let cpuStart = processCPUSeconds()
            let rebuilt = try replayTimeline.reconstruct(at: UInt64(logSize))
            let replaySeconds = (clock.now - replayStart).seconds
            replayRates.append(Double(logSize) / replaySeconds)
            replayCores.append((processCPUSeconds() - cpuStart) / replaySeconds)
            precondition(rebuilt.replayed == logSize && rebuilt.refused.isEmpty, "replay did not fold every action")
            precondition(rebuilt.state == store.snapshot.state, "replay disagrees with the store")

            var decoded = 0
            let decodeStart = clock.now
            try store.directory.forEachEnvelope(from: 1) { _ in decoded += 1; return true }
            decodeRates.append(Double(decoded) / (clock.now - decodeStart).seconds)

            var state = JSONValue.object([:])
            let reducer = JSONDocumentReducer()
            let serialStart = clock.now
            try store.directory.forEachEnvelope(from: 1) { envelope in
                try reducer.reduce(into: &state, action: envelope)
                return true
            }
            serialRates.append(Double(logSize) / (clock.now - serialStart).seconds)
        }
        print(String(format: "replay (stock reducer, %@ actions): %10.0f actions/s  (median of %d runs of %d actions: %@)",
                     type, median(replayRates), replayRuns, logSize, replayRates.map { String(format: "%.2f M/s", $0 / 1e6) }.joined(separator: ", ")))
        print(String(format: "  cores busy during replay: %.2f (median)", median(replayCores)))
        print(String(format: "  of which: read+decode alone %10.0f actions/s; read+decode+reduce on one thread %10.0f actions/s",
                     median(decodeRates), median(serialRates)))

        guard stateAtSeq else { return }
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

/// The median of `values` (the mean of the middle two when their count is even).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// CPU time (user and system) this process has used so far, all threads.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
