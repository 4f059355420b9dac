import ReelJSON

/// A line a client receives from the server: a response to one of its requests, or a
/// notification (an `update` of a subscription). This is the client's side of the protocol;
/// `reel` reads every line the daemon sends through it.
///
/// Reading is lenient where the server is strict: members this version does not know are ignored,
/// so a client keeps working against a newer server that adds to the protocol (the protocol allows
/// additions without a version bump).
public enum RPCServerMessage: Sendable, Equatable {
    /// The answer to a request, matched by ``RPCResponse/id``.
    case response(RPCResponse)
    /// A message the server sent on its own.
    case notification(RPCNotification)

    /// Parses one line from the server.
    ///
    /// - Parameters:
    ///   - line: The UTF-8 bytes of the line, with or without its `"\n"`.
    ///   - maxDepth: How deeply arrays and objects may nest; states can be deep, so the default
    ///     is more generous than the server's.
    /// - Throws: ``RPCError`` with -32700 when the line is not JSON, or -32600 when it is not a
    ///   JSON-RPC 2.0 response or notification; the message says what was wrong.
    public static func parse(_ line: [UInt8], maxDepth: Int = 512) throws(RPCError) -> RPCServerMessage {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: line, maxDepth: maxDepth)
        } catch {
            throw RPCError(code: RPCError.Code.parseError, message: "the server sent invalid JSON: \(error.message)")
        }
        return try RPCServerMessage(json: json)
    }

    /// Reads a parsed message from the server.
    ///
    /// - Parameter json: The whole message.
    /// - Throws: ``RPCError`` with -32600 when it is not a JSON-RPC 2.0 response or notification.
    public init(json: JSONValue) throws(RPCError) {
        func failure(_ message: String) -> RPCError {
            RPCError(code: RPCError.Code.invalidRequest, message: "the server sent \(message)")
        }
        guard case .object(let members) = json else {
            throw failure("\(json.described) instead of a JSON-RPC object")
        }
        guard members["jsonrpc"] == .string(WireProtocol.jsonRPCVersion) else {
            throw failure("a message without \"jsonrpc\": \"2.0\"")
        }
        if let method = members["method"], members["id"] == nil {
            guard case .string(let name) = method else {
                throw failure("a notification whose method is \(method.described)")
            }
            self = .notification(RPCNotification(method: name, params: members["params"]))
            return
        }
        guard let rawID = members["id"] else {
            throw failure("a message with neither an id nor a method")
        }
        let id: RPCID?
        if rawID.isNull {
            id = nil
        } else if let readable = RPCID(json: rawID) {
            id = readable
        } else {
            throw failure("a response whose id is \(rawID.described)")
        }
        switch (members["result"], members["error"]) {
        case (let result?, nil):
            guard let id else { throw failure("a result with a null id") }
            self = .response(RPCResponse(id: id, result: result))
        case (nil, let error?):
            self = .response(RPCResponse(id: id, error: try Self.readError(error, failure: failure)))
        case (_?, _?):
            throw failure("a response with both a result and an error")
        case (nil, nil):
            throw failure("a response with neither a result nor an error")
        }
    }

    private static func readError(_ json: JSONValue, failure: (String) -> RPCError) throws(RPCError) -> RPCError {
        guard case .object(let members) = json else {
            throw failure("an error that is \(json.described), not an object")
        }
        guard let code = members["code"]?.intValue, let wide = Int(exactly: code) else {
            throw failure("an error without an integer code")
        }
        guard case .string(let message)? = members["message"] else {
            throw failure("an error without a message")
        }
        return RPCError(code: wide, message: message, data: members["data"])
    }
}
