import NIOCore
import NIOPosix
import ReelFraming
import ReelJSON
import ReelServer
import Synchronization

/// A stand-in daemon on a real Unix socket that answers each request line from a script.
///
/// For what a real daemon cannot be made to do on cue: close a connection while a dispatch is in
/// flight, answer out of order, put an update in the same write as the answer announcing it, send
/// a gap. The client under test is the real one, over a real socket.
final class ScriptedServer: Sendable {
    /// What to do with one request.
    enum Reply: Sendable {
        /// Write these messages, as lines, in one write.
        case send([JSONValue])
        /// Write these messages in one write, then close the connection.
        case sendThenClose([JSONValue])
        /// Close the connection without answering.
        case close
        /// Answer nothing (the script may answer later through another request's reply).
        case ignore
    }

    /// One request as it arrived, with the number of its connection (1, 2, … in accept order).
    struct Received: Sendable {
        var connection: Int
        var request: JSONValue
        var method: String? { request["method"]?.stringValue }
        var params: JSONValue? { request["params"] }
    }

    typealias Script = @Sendable (_ request: JSONValue, _ connection: Int) -> Reply

    let socketPath: String
    private let listener: any Channel
    private let recorder: Recorder

    private init(socketPath: String, listener: any Channel, recorder: Recorder) {
        self.socketPath = socketPath
        self.listener = listener
        self.recorder = recorder
    }

    /// Listens on `socketPath` and answers by `script`.
    static func start(socketPath: String, script: @escaping Script) async throws -> ScriptedServer {
        let recorder = Recorder()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let number = recorder.accept(channel)
                    try channel.pipeline.syncOperations.addHandler(
                        LineFramingHandler(maxLineLength: 1 << 24))
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedConnectionHandler(connection: number, script: script, recorder: recorder))
                }
            }
            .bind(unixDomainSocketPath: socketPath).get()
        return ScriptedServer(socketPath: socketPath, listener: listener, recorder: recorder)
    }

    /// Stops listening and closes every connection.
    func stop() async {
        try? await listener.close()
        for channel in recorder.connections { try? await channel.close() }
    }

    /// Every request received so far, in order.
    var received: [Received] { recorder.received }

    /// The requests of one method received so far, in order.
    func received(_ method: String) -> [Received] { received.filter { $0.method == method } }

    // MARK: - Building messages

    /// A result answering `request`.
    static func result(_ request: JSONValue, _ result: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "id": request["id"] ?? .null, "result": result]
    }

    /// An error answering `request`.
    static func error(_ request: JSONValue, code: Int64, message: String, data: JSONValue? = nil) -> JSONValue {
        var error: JSONValue = ["code": .int(code), "message": .string(message)]
        if let data, case .object(var members) = error {
            members["data"] = data
            error = .object(members)
        }
        return ["jsonrpc": "2.0", "id": request["id"] ?? .null, "error": error]
    }

    /// The answer to `hello` from a daemon at `seq`.
    static func hello(_ request: JSONValue, seq: Int64 = 0) -> JSONValue {
        result(request, [
            "server": "reeld", "version": "0.0-scripted", "protocol": 1, "seq": .int(seq),
            "reducer": ["name": "reel.json", "version": "1"], "capabilities": ["dispatch.idempotency", "subscribe.since"],
        ])
    }

    /// An `update` notification.
    static func update(_ subscription: String, seq: Int64, _ members: JSONObject) -> JSONValue {
        var params = members
        params["subscription"] = .string(subscription)
        params["seq"] = .int(seq)
        return ["jsonrpc": "2.0", "method": "update", "params": .object(params)]
    }

    /// A logged action as `history` and actions-mode updates carry it.
    static func action(seq: Int64, type: String = "increment", payload: JSONValue = ["path": "/n"]) -> JSONValue {
        [
            "seq": .int(seq), "type": .string(type), "payload": payload, "time": "2026-03-14T09:27:41.118604512Z",
            "peer": ["uid": 1000, "gid": 1000, "pid": 4242],
        ]
    }
}

/// What a scripted server has seen, shared with its connections' handlers.
private final class Recorder: Sendable {
    private struct State {
        var connections: [any Channel] = []
        var received: [ScriptedServer.Received] = []
    }
    private let state = Mutex(State())

    func accept(_ channel: any Channel) -> Int {
        state.withLock { state in
            state.connections.append(channel)
            return state.connections.count
        }
    }

    func record(_ request: JSONValue, connection: Int) {
        state.withLock { $0.received.append(ScriptedServer.Received(connection: connection, request: request)) }
    }

    var connections: [any Channel] { state.withLock { $0.connections } }
    var received: [ScriptedServer.Received] { state.withLock { $0.received } }
}

/// Answers the lines of one connection by the script.
private final class ScriptedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let connection: Int
    let script: ScriptedServer.Script
    let recorder: Recorder

    init(connection: Int, script: @escaping ScriptedServer.Script, recorder: Recorder) {
        self.connection = connection
        self.script = script
        self.recorder = recorder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        guard let request = try? JSONValue(parsing: Array(line.readableBytesView)) else {
            context.close(promise: nil)
            return
        }
        recorder.record(request, connection: connection)
        let channel = context.channel
        switch script(request, connection) {
        case .send(let messages):
            channel.writeAndFlush(Self.lines(messages), promise: nil)
        case .sendThenClose(let messages):
            channel.writeAndFlush(Self.lines(messages)).whenComplete { _ in channel.close(promise: nil) }
        case .close:
            channel.close(promise: nil)
        case .ignore:
            break
        }
    }

    private static func lines(_ messages: [JSONValue]) -> ByteBuffer {
        ByteBuffer(string: messages.map { $0.jsonString + "\n" }.joined())
    }
}
