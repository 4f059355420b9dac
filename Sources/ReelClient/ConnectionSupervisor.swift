import Logging
import NIOCore
import NIOPosix
import ReelFraming
import ReelProtocol

/// Opens connections, greets the daemon, and opens a new connection whenever the current one
/// drops, with exponential backoff, until the client closes or the reconnect policy gives up.
///
/// Each connection is greeted with `hello` before anything else is sent on it; once the daemon
/// answers, the core resumes the subscriptions and sends the requests that waited
/// (``ClientStateMachine/handshakeSucceeded(generation:hello:)``).
struct ConnectionSupervisor: Sendable {
    let socketPath: String
    let configuration: ReelClientConfiguration
    let core: ClientCore

    private var logger: Logger { core.logger }

    /// Opens one connection and completes its handshake.
    ///
    /// - Returns: The connection's generation, its channel, and the daemon's `hello`.
    /// - Throws: ``ReelClientError/Code/connectionFailed`` when the socket does not accept the
    ///   connection, the daemon refuses `hello`, or the connection closes during the handshake;
    ///   ``ReelClientError/Code/closed`` when the client closed meanwhile.
    func connect() async throws(ReelClientError) -> (generation: UInt64, channel: any Channel, hello: ServerHello) {
        let generation = core.makeGeneration()
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: configuration.eventLoopGroup)
                .channelInitializer { [core, maxLineLength = configuration.maxLineLength] channel in
                    channel.eventLoop.makeCompletedFuture {
                        let operations = channel.pipeline.syncOperations
                        // The daemon puts no limit on the lines it sends (a `get` of a large state is
                        // one line), so the client sets its own: enough for any state the app
                        // expects, small enough that a broken peer cannot make it buffer without end.
                        try operations.addHandler(LineFramingHandler(maxLineLength: maxLineLength))
                        try operations.addHandler(ClientChannelHandler(core: core, generation: generation))
                    }
                }
                .connect(unixDomainSocketPath: socketPath).get()
        } catch {
            throw ReelClientError(
                .connectionFailed, "cannot connect to \(socketPath): \(SocketErrorText.connecting(to: socketPath, error))",
                underlying: error)
        }
        guard core.connectionOpened(generation: generation, channel: channel) else {
            channel.close(promise: nil)
            throw core.closedError  // only a closed client refuses a new connection
        }
        // The peer may have closed the connection before it was registered as opened: that loss
        // found no connection to end and was ignored, so `hello` would wait forever on a dead
        // channel. A close from now on ends the registered connection (and fails `hello`).
        guard channel.isActive else {
            core.connectionLost(generation: generation)
            throw ReelClientError(.connectionFailed, "the connection to \(socketPath) closed as soon as it opened")
        }
        do throws(ReelClientError) {
            let params = HelloParams(client: configuration.clientName, protocolVersion: WireProtocol.version)
            let result = try await core.send(
                method: Method.Hello.name.rawValue, params: params.jsonValue, kind: .handshake(generation: generation),
                policy: .failIfConnectionLost
            ).get()
            let hello = try WireDecoding.decode(ServerHello.self, result)
            guard core.handshakeSucceeded(generation: generation, hello: hello) else {
                throw ReelClientError(.connectionFailed, "the connection to \(socketPath) closed right after the hello handshake")
            }
            logger.debug("connected", metadata: ["socket": "\(socketPath)", "seq": "\(hello.seq)", "connection": "\(generation)"])
            return (generation, channel, hello)
        } catch {
            channel.close(promise: nil)
            // Done with this connection now, not when its close completes: the next attempt may
            // come first, and only a disconnected client takes a new connection.
            core.connectionLost(generation: generation)
            guard let refusal = error.serverError else { throw error }
            throw ReelClientError(
                .connectionFailed, "the daemon at \(socketPath) refused the hello handshake: error \(refusal.code): \(refusal.message)",
                serverError: refusal)
        }
    }

    /// Follows the connection from `channel` on: waits for it to close, then reconnects, until the
    /// client is closed or the reconnect policy gives up (which closes the client).
    func run(generation: UInt64, channel: any Channel) async {
        var current = (generation: generation, channel: channel)
        while true {
            try? await current.channel.closeFuture.get()
            // Normally the channel's handler has reported the drop already; this covers the case
            // where the close future completes first. A second report changes nothing.
            core.connectionLost(generation: current.generation)
            guard let next = await reconnect() else { return }
            current = (next.generation, next.channel)
        }
    }

    private func reconnect() async -> (generation: UInt64, channel: any Channel)? {
        let policy = configuration.reconnect
        let clock = ContinuousClock()
        let start = clock.now
        var delay = policy.initialDelay
        var lastError: ReelClientError?
        while !core.isClosed {
            if let limit = policy.giveUpAfter, start.duration(to: clock.now) >= limit {
                let why = lastError.map { "; the last attempt: \($0.message)" } ?? ""
                let error = ReelClientError(
                    .connectionFailed, "the connection to \(socketPath) dropped and reconnecting gave up after \(limit)\(why)",
                    underlying: lastError)
                logger.warning("giving up reconnecting", metadata: ["socket": "\(socketPath)"])
                core.close(reason: error)?.close(promise: nil)
                return nil
            }
            do {
                let connection = try await connect()
                logger.info("reconnected", metadata: ["socket": "\(socketPath)", "seq": "\(connection.hello.seq)"])
                return (connection.generation, connection.channel)
            } catch {
                lastError = error
                logger.debug("reconnecting failed", metadata: ["error": "\(error)", "retryIn": "\(delay)"])
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return nil  // cancelled: the client is closing
            }
            delay = policy.delay(after: delay)
        }
        return nil
    }
}
