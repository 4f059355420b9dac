import Dispatch
import Foundation
import ReelStore

/// The executor every task of one shared log runs on: a serial queue of its own, not Swift's
/// cooperative pool.
///
/// The store's writer blocks its thread on each call (``BlockingBridge``) until a task has talked
/// to PostgreSQL. Were that task to need a thread of the cooperative pool (as wide as the machine
/// has cores: two, on small servers), a pool busy with the daemon's own async work, or blocked by
/// a caller that should not block it, would stall the writer behind unrelated work, or for ever.
/// On its own queue the work needs nothing but the NIO event loop that does the I/O.
final class SharedLogExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: a DispatchQueue is thread-safe; the class holds nothing else.
    private let queue: DispatchQueue
    /// Marks the queue, for ``isCurrent``.
    static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// Runs async work to its end for a caller that must block: the store's writer is a plain thread
/// and the ``SharedLog`` calls are synchronous.
///
/// Each call gets a deadline. When it passes, the caller gets ``SharedLogError/Kind/unavailable``
/// at once and the task is cancelled (which closes the connection it was using, see
/// ``ConnectionSource``): a hung server costs the writer one timeout per call, never a stuck thread.
/// A cancelled append may still commit, which the protocol allows ("may or may not have been
/// applied"): the store then finds the entries when it follows the log.
struct BlockingBridge: Sendable {
    let executor: SharedLogExecutor
    let timeout: Duration

    /// Runs `operation` and waits for its result, up to the deadline. `describeTimeout` is the
    /// error for a call that did not end in time.
    func run<T: Sendable>(
        describeTimeout: @autoclosure () -> SharedLogError,
        _ operation: @escaping @Sendable () async -> Result<T, SharedLogError>
    ) throws(SharedLogError) -> T {
        let outcome = Outcome<T>()
        let task = Task(executorPreference: executor) {
            outcome.finish(await operation())
        }
        switch outcome.wait(timeout: timeout) {
        case .some(.success(let value)):
            return value
        case .some(.failure(let error)):
            throw error
        case .none:
            task.cancel()
            throw describeTimeout()
        }
    }
}

/// A result handed from a task to a blocked thread.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    // @unchecked: `result` is written once, before `done` is signalled, and read after.
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var result: Result<T, SharedLogError>?

    func finish(_ result: Result<T, SharedLogError>) {
        lock.withLock { self.result = result }
        done.signal()
    }

    /// The result, or nil when `timeout` passed first.
    func wait(timeout: Duration) -> Result<T, SharedLogError>? {
        let nanoseconds = Int(min(timeout / .nanoseconds(1), Double(Int.max / 2)))
        guard done.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return lock.withLock { result }
    }
}
