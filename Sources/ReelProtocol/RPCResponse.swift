import ReelJSON

/// The server's answer to one request: a result or an error, with the request's id.
///
/// On the wire it is one line, members in the order `jsonrpc`, `id`, `result` or `error`:
///
/// ```
/// {"jsonrpc":"2.0","id":7,"result":{"seq":42}}
/// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON: …"}}
/// ```
///
/// The envelope is written by hand around `JSONValue.serialize(into:)` because a JSON object is
/// canonical (members sorted), which would put `error` before `id` and `id` before `jsonrpc`;
/// a fixed order keeps lines readable in `socat` and golden tests byte-exact.
public struct RPCResponse: Sendable, Equatable, LineEncodable {
    /// The id of the request answered; `nil` (written `null`) only in an error response to a
    /// request whose id could not be read.
    public var id: RPCID?
    /// The result value, or the error.
    public var outcome: Result<JSONValue, RPCError>

    /// A success response.
    ///
    /// - Parameters:
    ///   - id: The request's id.
    ///   - result: The result value (a server answers with ``RPCSuccess`` and a typed result instead).
    public init(id: RPCID, result: JSONValue) {
        self.id = id
        self.outcome = .success(result)
    }

    /// An error response.
    ///
    /// - Parameters:
    ///   - id: The request's id, or `nil` when it could not be read.
    ///   - error: The error object.
    public init(id: RPCID?, error: RPCError) {
        self.id = id
        self.outcome = .failure(error)
    }

    /// The result value, or `nil` for an error response.
    public var result: JSONValue? {
        if case .success(let value) = outcome { value } else { nil }
    }

    /// The error, or `nil` for a success response.
    public var error: RPCError? {
        if case .failure(let error) = outcome { error } else { nil }
    }

    /// Appends the response as one line, ending in `"\n"`, to `bytes`.
    ///
    /// - Parameter bytes: The buffer to append UTF-8 text to; a server reuses one per connection.
    public func encode(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        if let id {
            id.serialize(into: &bytes)
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        switch outcome {
        case .success(let value):
            bytes.append(contentsOf: #","result":"#.utf8)
            value.serialize(into: &bytes)
        case .failure(let error):
            bytes.append(contentsOf: #","error":"#.utf8)
            error.serialize(into: &bytes)
        }
        bytes.append(contentsOf: "}\n".utf8)
    }

}

/// A request that could not be read, with the error response to send for it.
public struct RPCErrorResponse: Error, Sendable, Equatable {
    /// The request's id when it could be read; `nil` is sent as `null`.
    public var id: RPCID?
    /// What was wrong.
    public var error: RPCError

    /// - Parameters:
    ///   - id: The id to answer with, or `nil` for `null`.
    ///   - error: The error object.
    public init(id: RPCID?, error: RPCError) {
        self.id = id
        self.error = error
    }

    /// The response to send.
    public var response: RPCResponse { RPCResponse(id: id, error: error) }

    /// The response as one line ending in `"\n"`.
    public func encodedLine() -> [UInt8] { response.encodedLine() }
}
