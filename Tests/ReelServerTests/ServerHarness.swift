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
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        LineFramingHandler(maxLineLength: 1 << 24, midLineTimeout: .seconds(60))
                    )
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            return try await body(TestConnection(outbound: outbound, next: { try await iterator.next() }))
        }
    }
}

/// One client connection of a test: send lines, read lines as JSON.
struct TestConnection {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let next: () async throws -> ByteBuffer?

    func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Sends a request with `id` and returns the next message (the caller knows what comes first).
    func request(_ id: Int, _ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        var message: JSONValue = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method)]
        if let params, case .object(var members) = message {
            members["params"] = params
            message = .object(members)
        }
        try await send(message.jsonString + "\n")
        return try await receive()
    }

    /// The next message from the server.
    func receive() async throws -> JSONValue {
        guard let line = try await next() else { throw ConnectionClosed() }
        return try JSONValue(parsing: Array(line.readableBytesView))
    }

    /// Whether the server closed the connection (after draining anything still sent).
    func isClosed() async -> Bool {
        do {
            while try await next() != nil {}
            return true
        } catch {
            return true
        }
    }
}

struct ConnectionClosed: Error {}
