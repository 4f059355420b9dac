#if canImport(Glibc)
import Glibc
#endif
import CReelSocket
import Logging
import NIOCore
import NIOPosix
import ReelCore
import ReelFraming
import ReelProtocol
import ReelStore
import ServiceLifecycle
import Synchronization

/// The socket server: accepts connections on a Unix domain socket and serves protocol version 1
/// over each (newline-delimited JSON-RPC 2.0).
///
/// A `Service`: on graceful shutdown it stops accepting, lets every connection answer the requests
/// it has read, then returns. The store is not closed here; its own service does that after, once
/// every dispatch read has been handed to it and answered. A peer that never reads cannot hold
/// this up for long: the daemon cancels its services after its shutdown time limit, which closes
/// that connection.
public struct ReelServer<State: StoreState>: Service {
    let configuration: ServerConfiguration
    let store: Store<State>
    let authorize: Authorizer
    let logger: Logger
    let eventLoopGroup: any EventLoopGroup
    /// Connections, subscriptions and refusals, for `stats` and the daemon's metrics.
    public let figures: ServerFigures

    public init(
        configuration: ServerConfiguration, store: Store<State>, authorize: @escaping Authorizer,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.authorize = authorize
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.figures = ServerFigures(metrics: configuration.metrics)
    }

    public func run() async throws {
        // A method declared in `Method.all` that nothing answers is a programming error, caught
        // here, before any client can call it.
        let unanswered = MethodHandler<State>.unansweredMethods
        precondition(unanswered.isEmpty, "methods without an answer: \(unanswered); conform them to TimelineQuery (ReelQuery)")
        let limits = configuration.limits
        let registry = ConnectionRegistry(open: figures.connections)
        let queryPool = NIOThreadPool(numberOfThreads: 2)
        queryPool.start()
        let handler = MethodHandler(
            store: store, queryPool: queryPool, serverVersion: configuration.serverVersion, authorize: authorize,
            figures: figures, handOver: configuration.handOver, tracer: configuration.tracer
        )
        let store = self.store
        let feed = UpdateFeed(
            seq: store.snapshot.seq,
            readActions: { (from, to, limit) throws(RPCError) in try await handler.history(from: from, to: to, limit: limit).actions },
            latestState: { () throws(RPCError) in
                let snapshot = store.snapshot
                do throws(StoreError) {
                    return (snapshot.seq, try snapshot.state.jsonValueOrThrow(seq: snapshot.seq))
                } catch {
                    throw RPCError(error)
                }
            }
        )
        store.observeCommittedActions { feed.committed($0, changes: $1) }
        figures.serve(feed)
        let listener: Listeners
        do {
            listener = try await bind(registry: registry, handler: handler, feed: feed, limits: limits)
        } catch {
            try? await queryPool.shutdownGracefully()
            throw error
        }
        // However the listening socket ends, the server takes no more connections, and returns
        // once those open have ended.
        listener.whenAnyCloses {
            registry.stopAccepting()
            listener.closeNow()
        }
        do {
            try configuration.onBound(configuration.socketPath)
        } catch {
            await listener.close()
            try? await queryPool.shutdownGracefully()
            throw error
        }
        logger.info("listening", metadata: ["socket": "\(configuration.socketPath)"])

        // Connections are served by their pipelines (ConnectionHandler), not by tasks of this one:
        // it waits until they have all ended. Cancelled (the shutdown's time limit), it closes
        // them, whatever they still owe.
        await withGracefulShutdownHandler {
            await registry.untilStopped()
        } onGracefulShutdown: {
            // No more connections; those open stop reading, answer what they read, and close.
            registry.stop()
            listener.closeNow()
        }
        // Cancelled rather than shut down gracefully, the listening socket is still open.
        await listener.close()
        try? await queryPool.shutdownGracefully()
        logger.info("server stopped")
    }

    /// Binds the socket. Each accepted connection is registered (under the connection limit) and
    /// gets its pipeline: the input gate, framing, the stall timer, the request intake and the
    /// connection's handler.
    private func bind(
        registry: ConnectionRegistry, handler: MethodHandler<State>, feed: UpdateFeed, limits: ServerConfiguration.Limits
    ) async throws -> Listeners {
        let loneCommitGates = LoneCommitGates(store: store)
        let executors = EventLoopTaskExecutors(eventLoopGroup)
        let ids = SubscriptionIDs()
        let logger = self.logger
        let initialize: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            Self.peerCredentials(of: channel).flatMapThrowing { peer in
                let outbox = Outbox(maxInFlight: limits.maxRequestsInFlight, channel: channel, feed: feed, figures: handler.figures)
                let connection = ServerConnection(
                    outbox: outbox, peer: peer, handler: handler, limits: limits, logger: logger, subscriptionIDs: ids
                )
                let operations = channel.pipeline.syncOperations
                switch registry.admit(channel, limit: limits.maxConnections) {
                case .stopped:
                    throw ConnectionRegistry.Stopped()
                case .refused:
                    try operations.addHandler(Refusal(limit: limits.maxConnections))
                case .admitted:
                    try operations.addHandlers(
                        WritabilityRelay(outbox: outbox),
                        InputGate(),
                        LineFramingHandler(maxLineLength: limits.maxLineLength),
                        MidLineStallHandler(timeout: limits.midLineTimeout),
                        RequestIntake(outbox: outbox, handler: handler, commits: loneCommitGates.gate(for: channel.eventLoop), peer: peer),
                        ConnectionHandler(connection: connection, registry: registry, executor: executors.executor(for: channel.eventLoop))
                    )
                }
            }
        }
        // Bound here rather than by NIO, which keeps its socket's descriptor to itself: a
        // take-over sends it to the next daemon (``HandOver``).
        let descriptor: CInt
        if let adopted = configuration.adoptedSocket {
            descriptor = adopted
        } else {
            descriptor = reel_listen_unix(configuration.socketPath, 256)
            guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "bind(\(configuration.socketPath))") }
        }
        // Each event loop listens on a duplicate of the socket and serves what it accepts, taking
        // turns (``AcceptTurns``); all of them start with their listening off.
        let loops = Array(eventLoopGroup.makeIterator())
        let turns = AcceptTurns(loops: loops.count, logger: logger)
        var channels: [any Channel] = []
        do {
            for (index, loop) in loops.enumerated() {
                let socket = index == 0 ? descriptor : dup(descriptor)
                guard socket >= 0 else { throw IOError(errnoCode: errno, reason: "dup(\(configuration.socketPath))") }
                let bootstrap = ServerBootstrap(group: loop, childGroup: loop)
                    .serverChannelOption(.autoRead, value: false)
                    .serverChannelOption(.maxMessagesPerRead, value: UInt(AcceptTurns.acceptsPerRead))
                    .serverChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(turns.handler(index: index)) }
                    }
                    // A peer that ends its input (Ctrl-D) still gets the answers to what it sent:
                    // without this, NIO would close the whole connection at the end of its input.
                    .childChannelOption(.allowRemoteHalfClosure, value: true)
                    .childChannelInitializer(initialize)
                do {
                    channels.append(try await bootstrap.withBoundSocket(socket).get())
                } catch {
                    if index > 0 || configuration.adoptedSocket == nil { close(socket) }
                    throw error
                }
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        turns.start(channels)
        figures.serve(turns)
        configuration.handOver?.listening(on: descriptor)
        return Listeners(channels: channels)
    }

    /// The peer's uid, gid and pid from `SO_PEERCRED`: who is on the other end of the socket, as
    /// the kernel saw it at `connect`; and the path of the executable that pid runs, read once,
    /// now. Stamped on every action the connection dispatches.
    static func peerCredentials(of channel: any Channel) -> EventLoopFuture<Peer> {
        guard let provider = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(.unknown) }
        let credentials: EventLoopFuture<reel_ucred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)
        )
        return credentials
            .map { Peer(uid: UInt32($0.uid), gid: UInt32($0.gid), pid: Int32($0.pid), exe: executablePath(of: Int32($0.pid))) }
            .recover { _ in .unknown }
    }

    /// The target of `/proc/<pid>/exe` (its first ``Peer/maxExeLength`` bytes), or `nil` when it
    /// cannot be read: the process is gone, or belongs to another user and the daemon may not
    /// look at it (the kernel asks for ptrace's read access). A read of procfs, which touches no
    /// disk: done on the event loop that accepted the connection.
    static func executablePath(of pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: Peer.maxExeLength)
        let count = buffer.withUnsafeMutableBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { readlink("/proc/\(pid)/exe", $0.baseAddress!, $0.count) }
        }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

/// Connections open now, against the limit.
final class ConnectionCount: Sendable {
    private let count = Mutex(0)

    var current: Int { count.withLock { $0 } }

    func admit(limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() {
        count.withLock { $0 -= 1 }
    }
}
