import Logging
import ReelJSON
// The client's API is made of the protocol's messages (`ServerHello`, `Snapshot`, `HistoryPage`,
// the params types…): an app that imports ReelClient gets them with it.
@_exported import ReelProtocol

/// A client of `reeld`: typed methods for every protocol method, subscriptions as async
/// sequences, and a connection that heals itself.
///
/// ```swift
/// let client = try await ReelClient.connect(socketPath: "./reel-data/reel.sock")
/// let receipt = try await client.dispatch(Action(type: "increment", payload: ["path": "/visits"]))
/// for try await update in try await client.subscribe(try JSONPointer("/visits")) {
///     print(update.seq, update.value ?? .null)
/// }
/// await client.close()
/// ```
///
/// **Concurrency.** One client serves any number of tasks at once over one connection: requests
/// are pipelined, each waits for the answer with its own id, and subscriptions deliver to their
/// own sequences.
///
/// **Reconnection.** When the connection drops (the daemon restarts, say), the client connects
/// again on its own with exponential backoff (``ReconnectPolicy``), sends `hello`, and resumes
/// every live subscription from the last seq it delivered with `subscribe`'s `since`, so a
/// subscription never misses or repeats a change. Requests in flight at the drop are sent again
/// when that is safe — reads, and dispatches that carry an idempotency key — while a dispatch
/// without a key fails with ``ReelClientError/Code/connectionLost`` ("outcome unknown"): it is
/// never silently applied twice. Requests made while disconnected wait for the next connection.
///
/// **Lifetime.** ``close()`` ends everything: waiting requests fail with
/// ``ReelClientError/Code/closed`` and subscriptions finish. The client owns one task, which
/// watches the connection and reconnects; `close()` cancels it and waits for it, so nothing of the
/// client outlives the call. (A scoped `withReelClient` was not made the only way in because an
/// app's client usually lives as long as the app, held by something that is not a task.)
public final class ReelClient: Sendable {
    /// The socket the client connects (and reconnects) to.
    public let socketPath: String
    /// The client's settings.
    public let configuration: ReelClientConfiguration

    let core: ClientCore
    private let firstHello: ServerHello
    private let supervisor: Task<Void, Never>

    private init(
        socketPath: String, configuration: ReelClientConfiguration, core: ClientCore, firstHello: ServerHello,
        supervisor: Task<Void, Never>
    ) {
        self.socketPath = socketPath
        self.configuration = configuration
        self.core = core
        self.firstHello = firstHello
        self.supervisor = supervisor
    }

    /// Connects to a daemon and greets it with `hello`.
    ///
    /// The first connection is tried once: an app learns at once that the daemon is not there.
    /// Later drops are healed according to `configuration.reconnect`.
    ///
    /// - Parameters:
    ///   - socketPath: The daemon's Unix socket, such as `./reel-data/reel.sock`.
    ///   - configuration: Framing and reconnection settings.
    ///   - logger: Where the client logs connections, drops and reconnections (nothing by default).
    /// - Returns: A connected client; call ``close()`` when done with it.
    /// - Throws: ``ReelClientError/Code/connectionFailed`` when the socket cannot be reached or the
    ///   daemon refuses the handshake (its error is in ``ReelClientError/serverError``).
    public static func connect(
        socketPath: String, configuration: ReelClientConfiguration = ReelClientConfiguration(),
        logger: Logger = Logger(label: "reel.client", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws(ReelClientError) -> ReelClient {
        let core = ClientCore(logger: logger)
        let supervisor = ConnectionSupervisor(socketPath: socketPath, configuration: configuration, core: core)
        let connection = try await supervisor.connect()
        let task = Task { await supervisor.run(generation: connection.generation, channel: connection.channel) }
        return ReelClient(
            socketPath: socketPath, configuration: configuration, core: core, firstHello: connection.hello, supervisor: task)
    }

    /// The daemon's latest `hello` answer: from the last (re)connection, or from the last call of
    /// ``hello()``, whichever came later.
    public var serverHello: ServerHello {
        core.hello ?? firstHello
    }

    /// Whether a connection is up and greeted right now. Only a hint: it may drop the next moment,
    /// and requests made while it is down wait for the next one.
    public var isConnected: Bool {
        core.isReady
    }

    /// Ends the client: waiting requests fail with ``ReelClientError/Code/closed``, subscriptions
    /// finish, the connection closes and reconnecting stops. Calling it again does nothing.
    public func close() async {
        let channel = core.close(reason: nil)
        try? await channel?.close()
        supervisor.cancel()
        await supervisor.value
    }

    deinit {
        // Forgotten without `close()`: do what can be done without waiting.
        core.close(reason: nil)?.close(promise: nil)
        supervisor.cancel()
    }

    /// Sends one request and returns its result.
    func request(_ method: MethodName, _ params: JSONValue?, resend: ResendPolicy) async throws(ReelClientError) -> JSONValue {
        try await core.send(method: method.rawValue, params: params, kind: .call, policy: resend).get()
    }
}

/// Connects a client for the duration of `body` and closes it afterwards, however `body` ends.
///
/// - Parameters:
///   - socketPath: The daemon's Unix socket.
///   - configuration: Framing and reconnection settings.
///   - logger: Where the client logs.
///   - isolation: The actor `body` runs on; the caller's, implicitly.
///   - body: The work to do with the client.
/// - Returns: What `body` returns.
/// - Throws: What ``ReelClient/connect(socketPath:configuration:logger:)`` or `body` throws.
public func withReelClient<Result: Sendable>(
    socketPath: String, configuration: ReelClientConfiguration = ReelClientConfiguration(),
    logger: Logger = Logger(label: "reel.client", factory: { _ in SwiftLogNoOpLogHandler() }),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (ReelClient) async throws -> Result
) async throws -> Result {
    let client = try await ReelClient.connect(socketPath: socketPath, configuration: configuration, logger: logger)
    do {
        let result = try await body(client)
        await client.close()
        return result
    } catch {
        await client.close()
        throw error
    }
}
