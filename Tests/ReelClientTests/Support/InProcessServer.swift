import Foundation
import Logging
import ReelClient
import ReelJSON
import ReelServer
import ReelStore
import ReelTestSupport
import ServiceLifecycle
import Testing

/// A real `ReelServer` on a real Unix socket in a temporary directory, with the stock store (on a
/// real LMDB data directory) behind it. Adapted from ReelServerTests' `ServerHarness`.
struct InProcessServer {
    let socketPath: String
    let store: Store<JSONValue>

    /// Runs a server for `body`, then shuts it down gracefully.
    static func run(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (InProcessServer) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory("reel-client-test")
        var logger = Logger(label: "reel-client-test")
        logger.logLevel = .warning
        let store = try Store(path: dir.sub("data"), definition: .stock, logger: logger)
        var configuration = ServerConfiguration(socketPath: dir.sub("reel.sock"))
        configure(&configuration)
        let server = ReelServer(configuration: configuration, store: store, authorize: { _, _ in true }, logger: logger)
        let group = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: configuration.socketPath) {
                try await Task.sleep(for: .milliseconds(10))
            }
            do {
                try await body(InProcessServer(socketPath: configuration.socketPath, store: store))
            } catch {
                Issue.record("\(error)")
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await store.close()
    }

    /// Connects a client for `body` and closes it afterwards.
    func withClient<R: Sendable>(
        configuration: ReelClientConfiguration = .forTests, _ body: (ReelClient) async throws -> R
    ) async throws -> R {
        try await withReelClient(socketPath: socketPath, configuration: configuration, body)
    }
}

extension ReelClientConfiguration {
    /// Quick reconnection, so tests that drop connections do not wait for the default backoff.
    static var forTests: ReelClientConfiguration {
        ReelClientConfiguration(
            clientName: "reel-client-tests",
            reconnect: ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), giveUpAfter: .seconds(30))
        )
    }
}
