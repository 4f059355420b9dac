import Logging
import NIOCore
import ReelCore
import ReelFraming
import ReelStore
import Synchronization

/// The last handler of a connection's pipeline, after its ``RequestIntake``: starts a task for
/// each request the intake routed on (queries, subscriptions; dispatches and the answers known at
/// once never get here), and ends the input when the peer or the server does.
///
/// A connection has no task of its own: one that only dispatches costs no task at all, one that
/// asks a question costs one for it. (A task per connection, reading an async channel's stream,
/// cost more than the rest of a short connection together: BENCHMARKS.md, "Latency".)
///
/// Subscribes and unsubscribes run one after the other in the order they were read, and a call
/// read after one waits for it to be done, as if read by one reader; calls run concurrently.
/// A call with a small answer made from memory runs on the connection's event loop, others on
/// the concurrency pool (``ServerConnection/answersOnItsEventLoop(_:)``).
final class ConnectionHandler<State: StoreState>: ChannelInboundHandler {
    typealias InboundIn = RoutedRequest

    private let connection: ServerConnection<State>
    private let executor: any TaskExecutor
    private let tasks: ConnectionTasks
    /// The last subscribe or unsubscribe started: the next one, and calls, wait for it.
    private var lane: Task<Void, Never>?

    init(connection: ServerConnection<State>, registry: ConnectionRegistry, executor: any TaskExecutor) {
        self.connection = connection
        self.executor = executor
        self.tasks = ConnectionTasks(registry: registry)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = unwrapInboundIn(data)
        let connection = self.connection, tasks = self.tasks, executor = self.executor
        let previous = lane
        switch request.route {
        case .answer, .dispatch:
            preconditionFailure("the intake carries out answers and dispatches itself")
        case .subscribe, .unsubscribe:
            lane = tasks.start(preferring: executor) {
                await previous?.value
                await connection.carryOut(request, tasks: tasks, executor: executor)
            }
        case .call(_, let call, _):
            let carryOut: @Sendable () async -> Void = {
                await previous?.value
                await connection.carryOut(request, tasks: tasks, executor: executor)
            }
            if ServerConnection<State>.answersOnItsEventLoop(call) {
                tasks.start(preferring: executor, carryOut)
            } else {
                tasks.start(preferring: globalConcurrentExecutor, carryOut)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let event = event as? ChannelEvent, event == .inputClosed else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // The peer ended its input, or the server stops reading (InputGate).
        connection.endInput()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? FramingError {
            // Nothing more is read: the error's answer comes after the answers owed, and closes.
            let connection = self.connection
            tasks.start(preferring: executor) { await connection.close(after: error) }
            return
        }
        connection.logger.debug("read failed: \(error)", metadata: ["pid": "\(connection.peer.pid)"])
        connection.endInput()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.outbox.abort()
        tasks.cancelAll()  // (the branch followers among them)
        context.fireChannelInactive()
    }
}

/// The tasks a connection started for its requests: counted by the ``ConnectionRegistry`` (the
/// server waits for them before it returns), and cancelled when the connection closes (a long
/// query for a peer that is gone stops at its next check).
final class ConnectionTasks: Sendable {
    private enum Entry {
        case running(Task<Void, Never>)
        /// Over before it was recorded as running.
        case finished
    }

    private struct State {
        var next = 0
        var entries: [Int: Entry] = [:]
        var cancelled = false
    }

    private let state = Mutex(State())
    private let registry: ConnectionRegistry

    init(registry: ConnectionRegistry) {
        self.registry = registry
    }

    /// Starts `operation` in a task preferring `executor`; `nil` once the connection closed.
    @discardableResult
    func start(preferring executor: any TaskExecutor, _ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never>? {
        let key: Int? = state.withLock { state in
            guard !state.cancelled else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let key else { return nil }
        registry.taskStarted()
        let task = Task(executorPreference: executor) {
            await operation()
            self.finished(key)
        }
        let cancel = state.withLock { state in
            if case .finished = state.entries[key] {
                state.entries[key] = nil
                return false
            }
            state.entries[key] = .running(task)
            return state.cancelled
        }
        if cancel { task.cancel() }
        return task
    }

    private func finished(_ key: Int) {
        state.withLock { state in
            if state.entries.removeValue(forKey: key) == nil { state.entries[key] = .finished }
        }
        registry.taskEnded()
    }

    /// Cancels every task running, and those started from now on.
    func cancelAll() {
        let running = state.withLock { state in
            state.cancelled = true
            return state.entries.values.compactMap { entry -> Task<Void, Never>? in
                if case .running(let task) = entry { task } else { nil }
            }
        }
        for task in running { task.cancel() }
    }
}
