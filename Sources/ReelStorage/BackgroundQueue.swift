import Foundation

/// Runs the work given to it in order, one piece at a time, on a thread of its own at
/// ``Thread/Priority/background`` priority: work nobody waits for, such as encoding a
/// checkpoint, which must not take a core from the threads that answer requests while they want
/// it (a state of 300,000 keys at 50 clients × 16 pipelined: 206,000 dispatches/s with its
/// checkpoints encoded at their priority, 253,000 in the background; BENCHMARKS.md, "Latency").
///
/// The thread is started when work comes to an idle queue and ends when the queue is empty
/// again: nothing to stop or join when its owner goes away, and no idle thread between
/// checkpoints that come thousands of actions apart. (Not a `DispatchQueue`: Dispatch's threads
/// are shared, and a thread's priority, once lowered, cannot be raised again without privileges.)
public final class BackgroundQueue: @unchecked Sendable {
    // @unchecked: `work` and `running` are touched under `condition` only.
    private let name: String
    private let condition = NSCondition()
    private var work: [@Sendable () -> Void] = []
    private var running = false

    /// - Parameter name: the thread's name (at most 15 bytes, as ``Thread/startNamed(_:priority:_:)``).
    public init(name: String) {
        precondition(name.utf8.count <= 15, "a thread's name shows its first 15 bytes only: \(name)")
        self.name = name
    }

    /// Runs `body` after the work given before it.
    public func async(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        work.append(body)
        let start = !running
        running = true
        condition.unlock()
        if start { Thread.startNamed(name, priority: .background) { [self] in runUntilEmpty() } }
    }

    /// Waits until the work given so far has run.
    public func waitUntilIdle() {
        condition.lock()
        while running { condition.wait() }
        condition.unlock()
    }

    private func runUntilEmpty() {
        while true {
            condition.lock()
            guard !work.isEmpty else {
                running = false
                condition.broadcast()
                condition.unlock()
                return
            }
            let next = work.removeFirst()
            condition.unlock()
            next()
        }
    }
}
