import Foundation
import Logging
import NIOCore
import NIOPosix
import ReelCore
import ReelJSON
import ReelProtocol
import ReelServer
import ReelStore
import ServiceLifecycle

/// A real server on a real socket in a temporary directory, with the stock store (on a real LMDB
/// data directory) behind it: the server's tests and the client's share it.
public struct ServerHarness: Sendable {
    public let socketPath: String
    public let store: Store<JSONValue>
    /// The server's figures (connections, subscriptions, how its event loops shared the connections).
    public let figures: ServerFigures

    /// Runs a server for `body`, then shuts it down gracefully and closes the store. An error
    /// thrown by `body` is rethrown once the server has stopped.
    public static func run(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        authorize: @escaping Authorizer = { _, _ in true },
        eventLoopGroup: (any EventLoopGroup)? = nil,
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory("reel-server-test")
        var logger = Logger(label: "reel-server-test")
        logger.logLevel = .warning
        let store = try Store(path: dir.sub("data"), definition: .stock, logger: logger)
        var configuration = ServerConfiguration(socketPath: dir.sub("reel.sock"))
        configure(&configuration)
        let server = ReelServer(
            configuration: configuration, store: store, authorize: authorize,
            eventLoopGroup: eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton, logger: logger
        )
        let group = ServiceGroup(services: [server], logger: logger)
        var failure: (any Error)?
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                // Not the socket file: a file can exist before anything accepts on it. Nor a
                // probe connection, which would count against the server's connection limit.
                try await waitUntil("the server to listen on \(configuration.socketPath)") {
                    SpawnedDaemon.listens(configuration.socketPath)
                }
                try await body(ServerHarness(socketPath: configuration.socketPath, store: store, figures: server.figures))
            } catch {
                failure = error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await store.close()
        if let failure { throw failure }
    }

    /// Opens a connection for `body`, closed afterwards.
    public func connect<R: Sendable>(_ body: (TestConnection) async throws -> R) async throws -> R {
        try await TestConnection.open(socketPath: socketPath, body)
    }
}
