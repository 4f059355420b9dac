import Foundation
@testable import ReelStorage
import Synchronization
import Testing

/// Work nobody waits for, on a thread of its own at background priority.
@Suite struct BackgroundQueueTests {
    @Test func runsTheWorkInOrderAndWaitsForIt() {
        let queue = BackgroundQueue(name: "reel-test-bg")
        let done = Mutex<[Int]>([])
        for number in 0..<200 {
            queue.async { done.withLock { $0.append(number) } }
        }
        queue.waitUntilIdle()
        #expect(done.withLock { $0 } == Array(0..<200))
        // Idle, the thread has ended; more work starts another, in order all the same.
        queue.async { done.withLock { $0.append(200) } }
        queue.waitUntilIdle()
        #expect(done.withLock { $0 }.last == 200)
    }

    @Test func runsOnANamedThreadAtBackgroundPriorityWhichItsThreadsInherit() {
        let queue = BackgroundQueue(name: "reel-test-nice")
        let seen = Mutex<(name: String?, nice: Int32, childNice: Int32)>((nil, 0, 0))
        let caller = Thread.currentNice
        queue.async {
            let child = DispatchSemaphore(value: 0)
            Thread.startNamed("reel-test-kid") {
                seen.withLock { $0.childNice = Thread.currentNice }
                child.signal()
            }
            child.wait()
            seen.withLock { $0.name = Thread.current.name; $0.nice = Thread.currentNice }
        }
        queue.waitUntilIdle()
        let result = seen.withLock { $0 }
        #expect(result.name == "reel-test-nice")
        #if os(Linux)
        #expect(result.nice == max(caller, Thread.backgroundNice))
        #expect(result.childNice == result.nice)
        // The caller's own priority is untouched (Linux keeps one per thread).
        #expect(Thread.currentNice == caller)
        #endif
    }
}
