import Foundation
import ReelProtocol

/// `reel verify`'s replay, one checkpoint interval per `verify` call, several at once.
///
/// A segment starts from the checkpoint that ends the one before it, so segments are independent
/// once each is known to end where the next begins: all of them clean is exactly what one replay
/// from the start would find, and the first one (in seq order) with a difference is the one to
/// report. Running as many at once as there are cores (offline, each in this process; live, each
/// on the daemon's query pool) turns a replay that one thread did at a time into one that keeps
/// every core busy, while the outcomes are still taken in order.
struct VerifySegments {
    /// Where each segment ends, in order: every checkpoint of the current reducer, then the
    /// latest seq. The first starts at 0.
    let ends: [UInt64]
    /// Segments being verified at once.
    var concurrency = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))

    /// Verifies the segments and hands their outcomes to `take` in seq order, until it returns
    /// `false` (a mismatch: the segments after it are not waited for).
    func run(
        on store: any StoreSource, take: (_ end: UInt64, _ outcome: VerifyOutcome) throws -> Bool
    ) async throws {
        var segments: [(from: UInt64, through: UInt64)] = []
        var from: UInt64 = 0
        for end in ends where end > from || (end == 0 && from == 0) {
            segments.append((from, end))
            from = end
        }
        try await withThrowingTaskGroup(of: (Int, VerifyOutcome).self) { group in
            var started = 0
            func start() {
                let index = started, segment = segments[index]
                group.addTask { (index, try await store.verify(from: segment.from, through: segment.through)) }
                started += 1
            }
            while started < min(concurrency, segments.count) { start() }
            var finished: [Int: VerifyOutcome] = [:]
            var next = 0
            while let (index, outcome) = try await group.next() {
                finished[index] = outcome
                while let ready = finished.removeValue(forKey: next) {
                    guard try take(segments[next].through, ready) else {
                        group.cancelAll()
                        return
                    }
                    next += 1
                }
                if started < segments.count { start() }
            }
        }
    }
}
