import Foundation
import ReelStorage

/// The hand-off between dispatchers (any thread or task) and the writer thread.
///
/// Dispatchers append requests; the writer takes everything waiting in one go, which is what makes
/// group commit happen: the requests that arrived while the previous commit was syncing share the
/// next transaction. Checkpoints encoded off the write path come back through here too, to be
/// written with the next commit.
final class WriteQueue<Request: Sendable>: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`'s lock.
    private let condition = NSCondition()
    private var requests: [Request] = []
    private var checkpoints: [Checkpoint] = []
    private var closed = false

    /// Queues a request. Returns `false` when the queue is closed (the store is shutting down).
    func submit(_ request: Request) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        requests.append(request)
        condition.signal()
        return true
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
        let taken = Array(requests.prefix(count))
        requests.removeFirst(count)
        let readyCheckpoints = checkpoints
        checkpoints.removeAll()
        return (taken, readyCheckpoints)
    }

    /// Checkpoints that arrived after the writer stopped.
    func takeCheckpoints() -> [Checkpoint] {
        condition.lock()
        defer { condition.unlock() }
        defer { checkpoints.removeAll() }
        return checkpoints
    }
}
