import DequeModule
import NIOCore
import ReelCore
import Synchronization

/// Accepted connections on their way from NIO's accept path to the server's accept loop.
///
/// Not the stream of `NIOAsyncChannel`s that the async `ServerBootstrap.bind` offers: when the
/// listening socket closes at shutdown, a connection accepted a moment before may still be in its
/// channel initializer, and NIO then drops its `NIOAsyncChannel` unused. That traps ("Deinited
/// NIOAsyncWriter without calling finish()", apple/swift-nio#2813) and kills the daemon in the
/// middle of its graceful shutdown, with answers unsent and no checkpoint — which a burst of
/// clients reconnecting at shutdown makes likely. Here a channel becomes a `NIOAsyncChannel` only
/// while the inbox is open, decided under the lock that closes it: every one made is handed to the
/// loop (which runs it through `executeThenClose`), and one that comes too late is just closed.
final class ConnectionInbox: Sendable {
    /// An accepted connection: its channel, whose inbound side yields what its ``RequestIntake``
    /// routed on, the ``Outbox`` shared with that intake, and who is on the other end.
    struct Connection: Sendable {
        let channel: NIOAsyncChannel<RoutedRequest, ByteBuffer>
        let outbox: Outbox
        let peer: Peer
    }

    private struct State {
        var open = true
        var waiting: Deque<Connection> = []
        var consumer: CheckedContinuation<Connection?, Never>?
    }

    private let state = Mutex(State())

    /// Thrown by ``admit(_:)`` once the inbox is closed: the bootstrap then closes the channel.
    struct Closed: Error {}

    /// Wraps an accepted channel and queues it for the loop. Call it from the channel's
    /// initializer, on its event loop, after its handlers are added.
    /// - Throws: ``Closed`` once the inbox is closed, or why the channel could not be wrapped;
    ///   either way the bootstrap closes the channel.
    func admit(_ channel: any Channel, outbox: Outbox, peer: Peer) throws {
        let consumer: CheckedContinuation<Connection?, Never>?
        let connection: Connection
        (consumer, connection) = try state.withLock { state in
            guard state.open else { throw Closed() }
            let connection = Connection(
                channel: try NIOAsyncChannel(wrappingChannelSynchronously: channel), outbox: outbox, peer: peer
            )
            guard let consumer = state.consumer else {
                state.waiting.append(connection)
                return (nil, connection)
            }
            state.consumer = nil
            return (consumer, connection)
        }
        consumer?.resume(returning: connection)
    }

    /// The next connection; `nil` once the inbox is closed and every connection in it taken.
    /// Cancellation closes the inbox.
    func next() async -> Connection? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Connection?? = state.withLock { state in
                    if let first = state.waiting.popFirst() { return .some(first) }
                    guard state.open else { return .some(nil) }
                    state.consumer = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            close()
        }
    }

    /// Takes no more connections; those already in the inbox are still handed out.
    func close() {
        let consumer = state.withLock { state in
            state.open = false
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }
}

/// One ``ConnectionInbox`` for each event loop of the server's group, emptied by an accept loop
/// that runs on that event loop (``EventLoopTaskExecutor``), as do the tasks it starts for each
/// connection. A connection accepted on an event loop is then carried on by that loop's thread
/// from its accept to its close. With one inbox for all, each connection would wake a thread of
/// the concurrency pool to take it, and that thread the event loop again to start it.
struct ConnectionInboxes: Sendable {
    struct Loop: Sendable {
        let inbox: ConnectionInbox
        let executor: EventLoopTaskExecutor
    }

    let loops: [Loop]
    private let byEventLoop: [ObjectIdentifier: ConnectionInbox]

    init(_ group: any EventLoopGroup) {
        loops = group.makeIterator().map { Loop(inbox: ConnectionInbox(), executor: EventLoopTaskExecutor($0)) }
        byEventLoop = Dictionary(uniqueKeysWithValues: loops.map { (ObjectIdentifier($0.executor.eventLoop), $0.inbox) })
    }

    /// The inbox of the accept loop on `eventLoop`; a loop the group did not list (none that NIO
    /// makes) goes to the first, whose accept loop starts it from another thread.
    func inbox(for eventLoop: any EventLoop) -> ConnectionInbox {
        byEventLoop[ObjectIdentifier(eventLoop)] ?? loops[0].inbox
    }

    /// Takes no more connections in any inbox.
    func close() {
        for loop in loops { loop.inbox.close() }
    }
}
