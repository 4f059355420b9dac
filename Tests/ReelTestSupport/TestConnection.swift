import NIOCore
import NIOPosix
import ReelFraming
import ReelJSON
import ReelServer

/// One client connection of a test: send lines, read lines as JSON.
public struct TestConnection {
    public let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let inbound: SharedIterator

    /// Connects to a Unix socket for `body`; the connection is closed afterwards.
    public static func open<R: Sendable>(socketPath: String, _ body: (TestConnection) async throws -> R) async throws -> R {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        LineFramingHandler(maxLineLength: 1 << 24)
                    )
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(TestConnection(outbound: outbound, inbound: SharedIterator(inbound.makeAsyncIterator())))
        }
    }

    public func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Sends a request with `id` and returns its response. Subscription updates that arrive
    /// first (they may: an update is not ordered with responses) are kept, in order, for the next
    /// ``receive()`` or ``updatesSoFar()``: none is dropped.
    public func request(_ id: Int, _ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        try await send(Self.requestLine(id, method, params))
        while true {
            let received = try await inbound.nextMessage()
            if received["method"] == "update" {
                inbound.keep(received)
                continue
            }
            return received
        }
    }

    /// Sends a `dispatch` for each of `params` (ids 1, 2, …) in one write, so that the server reads
    /// them together, and returns the responses in order.
    public func dispatchTogether(_ params: [JSONValue]) async throws -> [JSONValue] {
        try await send(params.enumerated().map { Self.requestLine($0.offset + 1, "dispatch", $0.element) }.joined())
        var responses: [JSONValue] = []
        for _ in params { responses.append(try await receive()) }
        return responses
    }

    private static func requestLine(_ id: Int, _ method: String, _ params: JSONValue?) -> String {
        var message: JSONValue = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method)]
        if let params, case .object(var members) = message {
            members["params"] = params
            message = .object(members)
        }
        return message.jsonString + "\n"
    }

    /// The next message from the server: updates kept by ``request(_:_:_:)`` first.
    public func receive() async throws -> JSONValue {
        if let kept = inbound.takeKept() { return kept }
        return try await inbound.nextMessage()
    }

    /// The updates ``request(_:_:_:)`` passed over and no ``receive()`` has returned yet.
    public func updatesSoFar() -> [JSONValue] { inbound.keptMessages }

    /// Whether the server closed the connection (after draining anything still sent).
    public func isClosed() async -> Bool {
        do {
            while try await inbound.next() != nil {}
            return true
        } catch {
            return true
        }
    }
}

public struct ConnectionClosed: Error {}

/// Lets the `next` closure of a connection advance one inbound iterator, and holds the updates a
/// request passed over.
final class SharedIterator: @unchecked Sendable {
    // @unchecked: a test reads its connection from one task at a time.
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private(set) var keptMessages: [JSONValue] = []
    init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> ByteBuffer? { try await iterator.next() }

    func nextMessage() async throws -> JSONValue {
        guard let line = try await next() else { throw ConnectionClosed() }
        return try JSONValue(parsing: Array(line.readableBytesView))
    }

    func keep(_ message: JSONValue) { keptMessages.append(message) }
    func takeKept() -> JSONValue? {
        // `.none`, not `nil`: JSONValue is itself ExpressibleByNilLiteral, and a bare `nil` here
        // would become `.some(.null)`.
        guard !keptMessages.isEmpty else { return .none }
        return keptMessages.removeFirst()
    }
}
