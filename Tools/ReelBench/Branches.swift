import Foundation
import Histogram
import ReelCore
import ReelJSON
import ReelStore

/// Branches on a large log (issue targets in parentheses): making a branch at the middle of a
/// log of 10 million actions (≤ 50 ms), what 1,000 branches add to the data directory (≤ 5%), and
/// a first dispatch to a branch and a read of its state (which rebuild the fork's state from the
/// checkpoint before it).
extension ReelBench {
    func branches() async throws {
        let path = try scratch("branches")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ContinuousClock()
        let size = branchesSize

        // The log, filled without syncs or the change index (setup, not a figure).
        var options = StoreOptions(checkpointEvery: checkpointEvery, storage: .init(durable: false))
        options.changeIndex = false
        let fillStart = clock.now
        do {
            let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
            var next = 1
            while next <= size {
                let count = min(1_000, size - next + 1)
                try await store.dispatch(batch: (next..<(next + count)).map(Self.patchAction))
                next += count
            }
            await store.close()
        }
        print(String(format: "branches: %d patch actions logged in %.1f s", size, (clock.now - fillStart).seconds))

        // Durable from here, as a daemon is: the fill's unsynced pages written out first, or the
        // first durable commit would pay for all of them.
        sync()
        options.storage.durable = true
        let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
        let before = store.directory.mapUsage.bytesUsed
        var made = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        let middle = UInt64(size / 2)
        var slowest: (index: Int, seconds: Double) = (0, 0)
        for index in 0..<branchCount {
            let start = clock.now
            _ = try store.timeline.createBranch("try-\(index)", at: middle + UInt64(index))
            let seconds = (clock.now - start).seconds
            _ = made.record(UInt64((seconds * 1e6).rounded()))
            if seconds > slowest.seconds { slowest = (index, seconds) }
        }
        let after = store.directory.mapUsage.bytesUsed
        print(Self.latencies("branch create at seq \(middle) of \(size) (each a durable commit)", made, target: "≤ 50 ms", section: "branches"))
        print(String(format: "branches: the slowest create was the %dth, %.1f ms", slowest.index + 1, slowest.seconds * 1e3))
        print(String(
            format: "branches: %d branches add %.1f KiB to the data directory's %.1f MiB in use: %.4f%% (target ≤ 5%%)",
            branchCount, Double(after - before) / 1024, Double(before) / 1_048_576, 100 * Double(after - before) / Double(before)
        ))
        let first = clock.now
        _ = try store.branchWriter.dispatch([Self.patchAction(1)], toBranch: "try-0", peer: .currentProcess)
        let firstSeconds = (clock.now - first).seconds
        let second = clock.now
        _ = try store.branchWriter.dispatch([Self.patchAction(2)], toBranch: "try-0", peer: .currentProcess)
        let secondSeconds = (clock.now - second).seconds
        let read = clock.now
        _ = try store.timeline.branch(named: "try-0").state(at: middle + 2)
        print(String(
            format: "branches: first dispatch to a branch %.1f ms (rebuilds the fork's state), the next %.1f ms; its state read %.1f ms",
            firstSeconds * 1e3, secondSeconds * 1e3, (clock.now - read).seconds * 1e3
        ))
        await store.close()
    }
}
