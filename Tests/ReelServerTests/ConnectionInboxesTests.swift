import NIOCore
import NIOPosix
@testable import ReelServer
import Testing

/// A connection's tasks on its own event loop: ``EventLoopTaskExecutor`` runs a task that prefers
/// it, and that task's children, on the event loop; ``ConnectionInboxes`` gives each event loop
/// its own inbox.
struct ConnectionInboxesTests {
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

    @Test func eachEventLoopHasAnInboxOfItsOwn() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let outside = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer {
            try? group.syncShutdownGracefully()
            try? outside.syncShutdownGracefully()
        }
        let inboxes = ConnectionInboxes(group)
        let loops = Array(group.makeIterator())
        #expect(inboxes.loops.count == 3)
        for (loop, entry) in zip(loops, inboxes.loops) {
            #expect(entry.executor.eventLoop === loop)
            #expect(inboxes.inbox(for: loop) === entry.inbox)
        }
        #expect(Set(loops.map { ObjectIdentifier(inboxes.inbox(for: $0)) }).count == 3)
        // A loop of another group (none NIO gives a channel of this one) goes to the first.
        #expect(inboxes.inbox(for: outside.next()) === inboxes.loops[0].inbox)
    }

    @Test func closingTheInboxesEndsEveryAcceptLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let inboxes = ConnectionInboxes(group)
        await withTaskGroup(of: Bool.self) { acceptLoops in
            for loop in inboxes.loops {
                acceptLoops.addTask(executorPreference: loop.executor) { await loop.inbox.next() == nil }
            }
            inboxes.close()
            var ended = 0
            for await nothing in acceptLoops where nothing { ended += 1 }
            #expect(ended == 2)
        }
        try await group.shutdownGracefully()
    }
}
