import NIOCore

/// Runs a task's jobs on one NIO event loop: the executor a connection's tasks prefer, so that
/// the requests its event loop reads are carried on by the same thread, not handed to the
/// concurrency pool's and back (a wake-up of another thread each way). Its jobs share the thread
/// with every channel of the loop, so they must not block; and the loop must outlive the tasks
/// (the daemon shuts its event loops down once the server has returned).
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { [self] in
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// An ``EventLoopTaskExecutor`` for each event loop of the server's group, made once: the
/// executor the tasks of a connection accepted on that loop prefer.
struct EventLoopTaskExecutors: Sendable {
    private let byEventLoop: [ObjectIdentifier: EventLoopTaskExecutor]

    init(_ group: any EventLoopGroup) {
        byEventLoop = Dictionary(uniqueKeysWithValues: group.makeIterator().map { (ObjectIdentifier($0), EventLoopTaskExecutor($0)) })
    }

    /// The executor of `eventLoop`; one made now for a loop the group did not list (none that
    /// NIO gives a channel of the group).
    func executor(for eventLoop: any EventLoop) -> EventLoopTaskExecutor {
        byEventLoop[ObjectIdentifier(eventLoop)] ?? EventLoopTaskExecutor(eventLoop)
    }
}
