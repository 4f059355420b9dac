import Dispatch
import Synchronization

/// Starts `body` in a task of its own and returns once that task is suspended, waiting for
/// something outside it (a continuation, a lock's turn): the event a test of "X waits until Y"
/// needs before it does Y, where a sleep would only make it likely.
///
/// The task runs on an executor of its own (one thread) that counts the jobs it was given and
/// ran: when every job has run and the task has not finished, the task is suspended.
/// - Throws: ``WaitTimedOut`` if the task keeps running for `timeout`; ``DidNotWait`` if it
///   finished instead of waiting.
public func startSuspended<T: Sendable>(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(20), _ body: @escaping @Sendable () async -> T
) async throws -> Task<T, Never> {
    let executor = WatchingExecutor()
    let finished = Flag()
    let task = Task(executorPreference: executor) {
        let value = await body()
        finished.value.store(true, ordering: .sequentiallyConsistent)
        return value
    }
    try await waitUntil("\(what()) to be suspended", timeout: timeout) { executor.isIdle }
    guard !finished.value.load(ordering: .sequentiallyConsistent) else { throw DidNotWait(what: what()) }
    return task
}

/// A task that was to wait finished instead.
public struct DidNotWait: Error, CustomStringConvertible {
    public var what: String
    public var description: String { "\(what) finished instead of waiting" }
}

/// An atomic flag a closure can capture.
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

/// A task executor on one serial queue that knows whether every job it was given has run.
final class WatchingExecutor: TaskExecutor, Sendable {
    private let queue = DispatchQueue(label: "reel-test.watching-executor")
    private let counts = Mutex<(given: Int, ran: Int)>((0, 0))

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        counts.withLock { $0.given += 1 }
        queue.async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            self.counts.withLock { $0.ran += 1 }
        }
    }

    /// Jobs were given and all have run: whatever runs here is suspended or done.
    var isIdle: Bool { counts.withLock { $0.given > 0 && $0.given == $0.ran } }
}
