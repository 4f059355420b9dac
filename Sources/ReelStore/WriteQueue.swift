import Foundation
import ReelStorage
import Synchronization

/// The hand-off between dispatchers (any thread or task) and the writer thread.
///
/// Dispatchers append requests; the writer takes everything waiting in one go, which is what makes
/// group commit happen: the requests that arrived while the previous commit was syncing share the
/// next transaction. Checkpoints encoded off the write path come back through here too, to be
/// written with the next commit.
///
/// After a group of one request, the idle writer first watches the queue for `idleSpin` before it
/// sleeps. A client that dispatches one action at a time sends its next one about a round trip
/// after its answer; if the writer slept meanwhile, waking it would cost a futex call and, on a
/// virtual machine, an interrupt to an idle core, per dispatch (one client: 3,800–4,200 →
/// 4,300–4,950 dispatches/s with 100 µs, BENCHMARKS.md). The cost is at most `idleSpin` of one
/// core after such a commit. After larger groups (many clients) it does not spin: the cores are
/// busier then, and the next group forms while the writer syncs anyway.
final class WriteQueue<Request: Sendable>: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`'s lock but `submissions`, an atomic.
    private let condition = NSCondition()
    private var requests: [Request] = []
    private var checkpoints: [Checkpoint] = []
    private var closed = false
    /// Counts submissions, for the spinning writer to notice one without the lock.
    private let submissions = Atomic<Int>(0)
    private let idleSpinNanoseconds: UInt64
    /// How many requests the writer took last time.
    private var lastTaken = 0

    init(idleSpin: Duration) {
        let (seconds, attoseconds) = idleSpin.components
        idleSpinNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Queues a request, or gives it back when the queue is closed (the store is shutting down).
    ///
    /// Consumed, and given back rather than kept by the caller for the refusal: a caller that still
    /// held it had it copied into the queue (every reference retained, 2% of an event loop's time
    /// at 50 x 16 pipelined).
    func submit(_ request: consuming Request) -> Request? {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return request
        }
        requests.append(request)
        submissions.add(1, ordering: .releasing)
        condition.unlock()
        // Signalled after unlocking: a writer woken while the lock is still held would run, find
        // the lock taken and sleep again until the unlock (two more context switches). No wake-up
        // is lost: a writer not yet waiting sees the request before it waits.
        condition.signal()
        return nil
    }

    /// Queues requests in order, under one lock; gives them back when the queue is closed.
    func submit(contentsOf batch: consuming [Request]) -> [Request]? {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return batch
        }
        let count = batch.count
        if requests.isEmpty { requests = batch } else { requests.append(contentsOf: batch) }
        submissions.add(count, ordering: .releasing)
        condition.unlock()
        condition.signal()  // (after unlocking: see submit(_:))
        return nil
    }

    /// Queues an encoded checkpoint for the writer to store.
    func submit(checkpoint: Checkpoint) {
        condition.lock()
        defer { condition.unlock() }
        checkpoints.append(checkpoint)
        condition.signal()
    }

    /// Refuses new requests from now on; the writer still drains what is queued.
    func close() {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        condition.broadcast()
    }

    /// Blocks until there is work and takes requests weighing at most `limit` together (always at
    /// least one) and all checkpoints; returns `nil` once the queue is closed and drained of requests.
    func next(limit: Int, weight: (Request) -> Int) -> (requests: [Request], checkpoints: [Checkpoint])? {
        condition.lock()
        defer { condition.unlock() }
        if requests.isEmpty && checkpoints.isEmpty && !closed && idleSpinNanoseconds > 0 && lastTaken == 1 {
            let seen = submissions.load(ordering: .acquiring)
            condition.unlock()
            let deadline = Self.monotonicNanoseconds() + idleSpinNanoseconds
            // (Bounded by a count too: the watch must end even if the clock were to stand still.)
            var rounds = 0
            while submissions.load(ordering: .acquiring) == seen, rounds < Self.maxSpinRounds, Self.monotonicNanoseconds() < deadline {
                rounds += 1
            }
            condition.lock()
        }
        while requests.isEmpty && checkpoints.isEmpty && !closed {
            condition.wait()
        }
        if requests.isEmpty && checkpoints.isEmpty { return nil }
        var count = 0
        var total = 0
        while count < requests.count {
            total += weight(requests[count])
            if total > limit && count > 0 { break }
            count += 1
        }
        var taken: [Request] = []
        if count == requests.count {
            // The usual case: the whole queue, handed over without copying it under the lock
            // that every submitter takes.
            swap(&taken, &requests)
            requests.reserveCapacity(count)
        } else {
            taken = Array(requests.prefix(count))
            requests.removeFirst(count)
        }
        lastTaken = count
        let readyCheckpoints = checkpoints
        checkpoints.removeAll()
        return (taken, readyCheckpoints)
    }

    /// Far more rounds than `idleSpin` allows (a clock read is tens of nanoseconds).
    private static var maxSpinRounds: Int { 200_000 }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Whether nothing waits for the writer and the queue takes requests.
    var isOpenAndEmpty: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !closed && requests.isEmpty
    }

    /// Checkpoints that arrived after the writer stopped.
    func takeCheckpoints() -> [Checkpoint] {
        condition.lock()
        defer { condition.unlock() }
        defer { checkpoints.removeAll() }
        return checkpoints
    }
}
