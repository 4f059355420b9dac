import NIOCore
import NIOEmbedded
import NIOPosix
import ReelTestSupport
@testable import ReelServer
import Testing

/// A connection's tasks: on its own event loop (``EventLoopTaskExecutor`` runs a task that prefers
/// it, and that task's children, on the event loop), counted by the ``ConnectionRegistry`` that
/// the server waits on, and cancelled with the connection (``ConnectionTasks``).
struct ConnectionTasksTests {
    @Test func aTaskPreferringAnEventLoopRunsOnItAsDoItsChildrenButThoseSentElsewhere() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        for loop in group.makeIterator() {
            let other = group.makeIterator().first { $0 !== loop }!
            let seen = await Task(executorPreference: EventLoopTaskExecutor(loop)) { () async -> [Bool] in
                var seen = [loop.inEventLoop]
                // Back on the event loop after waiting for work done on another thread.
                _ = try? await other.submit { 1 }.get()
                seen.append(loop.inEventLoop)
                await withTaskGroup(of: Bool.self) { children in
                    children.addTask { loop.inEventLoop }
                    for await child in children { seen.append(child) }
                }
                let elsewhere = await withTaskGroup(of: Bool.self) { children in
                    children.addTask(executorPreference: globalConcurrentExecutor) { loop.inEventLoop }
                    return await children.next()!
                }
                seen.append(!elsewhere)
                return seen
            }.value
            #expect(seen == [true, true, true, true])
        }
        try await group.shutdownGracefully()
    }

    @Test func eachEventLoopHasAnExecutorOfItsOwn() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let outside = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer {
            try? group.syncShutdownGracefully()
            try? outside.syncShutdownGracefully()
        }
        let executors = EventLoopTaskExecutors(group)
        let loops = Array(group.makeIterator())
        for loop in loops {
            #expect(executors.executor(for: loop).eventLoop === loop)
            #expect(executors.executor(for: loop) === executors.executor(for: loop), "made once")
        }
        // A loop of another group (none NIO gives a channel of this one) gets one of its own.
        #expect(executors.executor(for: outside.next()).eventLoop === outside.next())
    }

    @Test func theServerWaitsForEveryTaskAndACancelledConnectionCancelsItsOwn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let registry = ConnectionRegistry(open: ConnectionCount())
        let tasks = ConnectionTasks(registry: registry)
        let executor = EventLoopTaskExecutor(group.next())
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let (starts, started) = AsyncStream.makeStream(of: Void.self)
        // One task waits to be released, one waits until it is cancelled.
        tasks.start(preferring: executor) {
            started.yield()
            for await _ in released { break }
        }
        tasks.start(preferring: executor) {
            started.yield()
            while !Task.isCancelled { await Task.yield() }
        }
        var startsIterator = starts.makeAsyncIterator()
        _ = await startsIterator.next()
        _ = await startsIterator.next()

        registry.stopAccepting()
        let waiting = try await startSuspended("the server waiting for the tasks") { await registry.untilStopped() }
        tasks.cancelAll()
        let late = tasks.start(preferring: executor) {}
        #expect(late == nil, "no task starts after the connection closed")
        release.yield()
        await waiting.value
        try await group.shutdownGracefully()
    }

    @Test func aGracefulStopClosesTheInputOfEveryConnectionAndWaitsForItsClose() async throws {
        let registry = ConnectionRegistry(open: ConnectionCount())
        let channels = [EmbeddedChannel(handler: InputGate()), EmbeddedChannel(handler: InputGate())]
        let ends = channels.map { channel in
            let ended = channel.embeddedEventLoop.makePromise(of: Void.self)
            try? channel.pipeline.syncOperations.addHandler(InputEnd(ended: ended))
            return ended.futureResult
        }
        for channel in channels {
            #expect(registry.admit(channel, limit: 10) == .admitted)
        }
        #expect(registry.open.current == 2)
        let waiting = try await startSuspended("the server waiting for the connections") { await registry.untilStopped() }
        registry.stop()
        for (channel, ended) in zip(channels, ends) {
            channel.embeddedEventLoop.run()
            try await ended.get()  // the connection heard that its input ended
        }
        #expect(registry.admit(EmbeddedChannel(), limit: 10) == .stopped, "no connection is taken after the stop")
        for channel in channels {
            _ = try channel.finish()
        }
        await waiting.value
        #expect(registry.open.current == 0 && registry.registered == 0)
    }

    @Test func aConnectionOverTheLimitIsRefusedAndNotCounted() throws {
        let registry = ConnectionRegistry(open: ConnectionCount())
        let first = EmbeddedChannel(), second = EmbeddedChannel()
        #expect(registry.admit(first, limit: 1) == .admitted)
        #expect(registry.admit(second, limit: 1) == .refused)
        #expect(registry.open.current == 1 && registry.registered == 2)
        _ = try second.finish()
        #expect(registry.open.current == 1 && registry.registered == 1)
        _ = try first.finish()
        #expect(registry.open.current == 0 && registry.registered == 0)
    }
}

/// Succeeds its promise when the input ends (``InputGate`` closes it).
private final class InputEnd: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let ended: EventLoopPromise<Void>

    init(ended: EventLoopPromise<Void>) {
        self.ended = ended
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { ended.succeed(()) }
    }
}
