import Foundation
import Testing

/// For a suite whose tests start daemons, servers, PostgreSQL or Chromium, run `reel` or `reeld`,
/// or open stores and LMDB environments: its tests run on threads of their own
/// (``TestThreads``), not on Swift's cooperative pool, and only a few such suites run at once
/// (``SuiteGate``).
///
/// Swift Testing starts every suite at once, on a cooperative pool as wide as the machine (two
/// threads here). Tests that block a thread (opening a store, a blocking socket read, waiting
/// for a process) held up every other test there, and with some 120 suites interleaved on two
/// threads, tests that take a second alone ran out their 60 s time limits on a busy machine.
///
/// The gate is taken around the whole suite, outside every time limit: Swift Testing 6.3 counts
/// a test's own scope (a trait of the test) in its time limit, but not its suite's (checked: a
/// suite trait that waits 65 s before its suite runs leaves a 1-minute limit unexceeded, a test
/// trait that does the same exceeds it). A test's time limit thus counts only its own run.
public struct HeavySuite: SuiteTrait, TestScoping {
    /// Whether the suite takes long (half a minute or more alone): such suites get the first
    /// slots, so that none of them starts last and ends the run late.
    public var isLong = false
    /// Work the whole suite needs before its tests (starting the shared PostgreSQL server, say),
    /// done once its slot is taken, outside its tests' time limits.
    public var prepare: (@Sendable () async throws -> Void)?

    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // Only the suite itself: a test marked on its own runs inside its time limit.
        guard testCase == nil, test.isSuite else { return try await function() }
        let arrived = ContinuousClock.now
        try await SuiteGate.shared.withSlot(first: isLong) {
            let started = ContinuousClock.now
            defer { SuiteGate.trace(test.name, waited: started - arrived, ran: .now - started) }
            try await withTaskExecutorPreference(TestThreads.shared) {
                try await prepare?()
                try await function()
            }
        }
    }
}

extension Trait where Self == HeavySuite {
    /// See ``HeavySuite``.
    public static var heavy: HeavySuite { HeavySuite() }

    /// A heavy suite that takes long (see ``HeavySuite/isLong``), or that needs `prepare` done
    /// before its tests (see ``HeavySuite/prepare``).
    public static func heavy(long: Bool = false, prepare: (@Sendable () async throws -> Void)? = nil) -> HeavySuite {
        HeavySuite(isLong: long, prepare: prepare)
    }
}

/// How many heavy suites run at once, process-wide: a counting semaphore whose waiters are
/// served in order of arrival, long suites first.
///
/// It opens once Swift's cooperative pool answers promptly. The run starts every suite at once,
/// and the pure ones (JSON, console, protocol: CPU only, on the pool) keep its two threads busy
/// for the first seconds (8 s idle, up to 18 s beside a busy loop); the tasks of a heavy suite
/// that run there meanwhile (its unstructured tasks, the client library's) waited that long:
/// a watchdog test's three pings at 20 ms took 18.7 s of its 20 s wait.
public final class SuiteGate: @unchecked Sendable {
    // @unchecked: every mutable member is behind `lock`.
    public static let shared = SuiteGate(slots: SuiteGate.defaultSlots)

    /// The slots: `REEL_TEST_HEAVY_SUITES` if set, else 4 (on 2 cores, a full run beside a busy
    /// loop on each: 130 issues before, none after; the idle run about as long as before).
    static var defaultSlots: Int {
        ProcessInfo.processInfo.environment["REEL_TEST_HEAVY_SUITES"].flatMap(Int.init) ?? 4
    }

    /// `REEL_TEST_GATE_TRACE=path` appends a line per heavy suite to `path`: when it started
    /// (seconds since the gate was made), how long it waited for its slot and how long it ran,
    /// to see how the gate spreads the suites.
    static let tracePath = ProcessInfo.processInfo.environment["REEL_TEST_GATE_TRACE"]
    private static let traceLock = NSLock()
    private static let processStart = ContinuousClock.now

    static func trace(_ suite: String, waited: Duration, ran: Duration) {
        guard let tracePath else { return }
        func seconds(_ duration: Duration) -> String { String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }
        let line = "\(seconds(ContinuousClock.now - processStart - ran)) \(seconds(waited)) \(seconds(ran)) \(suite)\n"
        traceLock.withLock {
            guard let handle = FileHandle(forWritingAtPath: tracePath) ?? {
                FileManager.default.createFile(atPath: tracePath, contents: nil)
                return FileHandle(forWritingAtPath: tracePath)
            }() else { return }
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            try? handle.close()
        }
    }

    private let lock = NSLock()
    private var free: Int
    private var waiting: [(first: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    public init(slots: Int) {
        _ = Self.processStart
        free = 0
        Task.detached { [self] in
            await Self.waitForAPromptPool()
            for _ in 0..<max(1, slots) { release() }
        }
    }

    /// Waits until a task started on the cooperative pool runs and returns within 20 ms (at most a
    /// minute: a pool that stays busy only delays the heavy suites).
    static func waitForAPromptPool() async {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let asked = ContinuousClock.now
            await Task.detached {}.value
            if ContinuousClock.now - asked < .milliseconds(20) { return }
        }
    }

    /// Runs `body` holding a slot; `first`: ahead of the waiters that are not.
    public func withSlot<T>(first: Bool = false, _ body: () async throws -> T) async rethrows -> T {
        await acquire(first: first)
        defer { release() }
        return try await body()
    }

    private func acquire(first: Bool) async {
        await withCheckedContinuation { continuation in
            let granted = lock.withLock {
                guard free > 0 else {
                    let place = first ? (waiting.firstIndex { !$0.first } ?? waiting.endIndex) : waiting.endIndex
                    waiting.insert((first, continuation), at: place)
                    return false
                }
                free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            guard !waiting.isEmpty else {
                free += 1
                return nil
            }
            return waiting.removeFirst().continuation
        }
        next?.resume()
    }
}

/// A task executor with as many threads as its jobs need at once (up to a cap), each job run on
/// a thread that nothing else blocks: a test may block its thread (a store's open, a blocking
/// read, a `usleep`) without holding up any other test. Idle threads end after a few seconds.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: every mutable member is behind `lock`.
    public static let shared = TestThreads(maximumThreads: 256)

    /// A thread waiting for a job, handed one directly.
    private final class Worker: @unchecked Sendable {
        // @unchecked: `job` is written under the executor's lock before `wake` is signalled.
        let wake = DispatchSemaphore(value: 0)
        var job: UnownedJob?
    }

    private let lock = NSLock()
    private let maximumThreads: Int
    private var threads = 0
    private var idle: [Worker] = []
    private var queued: [UnownedJob] = []
    private var queuedStart = 0

    public init(maximumThreads: Int) {
        self.maximumThreads = maximumThreads
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        enum Next { case handed(Worker), spawn, queued }
        let next = lock.withLock { () -> Next in
            if let worker = idle.popLast() {
                worker.job = job
                return .handed(worker)
            }
            if threads < maximumThreads {
                threads += 1
                return .spawn
            }
            queued.append(job)
            return .queued
        }
        switch next {
        case .handed(let worker): worker.wake.signal()
        case .spawn: startThread(first: job)
        case .queued: break
        }
    }

    private func startThread(first: UnownedJob) {
        let thread = Thread { [self] in run(first: first) }
        thread.name = "reel-test"
        thread.stackSize = 8 << 20
        thread.start()
    }

    private func run(first: UnownedJob) {
        var next: UnownedJob? = first
        let worker = Worker()
        while let job = next {
            job.runSynchronously(on: asUnownedTaskExecutor())
            next = nextJob(for: worker)
        }
    }

    /// The next job for a thread that finished one: a queued one, or one handed to it while it
    /// waits; `nil` when it waited long enough without one (the thread ends).
    private func nextJob(for worker: Worker) -> UnownedJob? {
        let taken = lock.withLock { () -> UnownedJob? in
            if queuedStart < queued.count {
                let job = queued[queuedStart]
                queuedStart += 1
                if queuedStart == queued.count {
                    queued.removeAll(keepingCapacity: true)
                    queuedStart = 0
                }
                return job
            }
            worker.job = nil
            idle.append(worker)
            return nil
        }
        if let taken { return taken }
        if worker.wake.wait(timeout: .now() + 5) == .timedOut {
            let retired = lock.withLock { () -> Bool in
                guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
                idle.remove(at: index)
                threads -= 1
                return true
            }
            if retired { return nil }
            // Handed a job just as the wait ended: its signal is on its way.
            worker.wake.wait()
        }
        return lock.withLock { worker.job }
    }
}
