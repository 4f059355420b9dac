import Foundation
import Logging
import NIOCore
import NIOPosix
import ReelCore
import ReelJSON
import ReelServer
import ReelStore
import ReelTestSupport
import ServiceLifecycle
import Testing

/// A real server on a real socket in a temporary directory, with the stock store behind it.
struct ServerHarness {
    let socketPath: String
    let store: Store<JSONValue>

    static func run(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        authorize: @escaping Authorizer = { _, _ in true },
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory()
        let logger = Logger(label: "reel-server-test")
        let store = try Store(path: dir.sub("data"), definition: .stock, logger: logger)
        var configuration = ServerConfiguration(socketPath: dir.sub("reel.sock"))
        configure(&configuration)
        let server = ReelServer(configuration: configuration, store: store, authorize: authorize, logger: logger)
        let group = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: configuration.socketPath) {
                try await Task.sleep(for: .milliseconds(10))
            }
            do {
                try await body(ServerHarness(socketPath: configuration.socketPath, store: store))
            } catch {
                Issue.record("\(error)")
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await store.close()
    }

    /// Opens a connection for `body`, closed afterwards.
    func connect<R: Sendable>(_ body: (TestConnection) async throws -> R) async throws -> R {
        try await TestConnection.open(socketPath: socketPath, body)
    }
}

