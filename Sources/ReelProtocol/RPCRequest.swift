import ReelJSON

/// One JSON-RPC 2.0 request (or notification) as a client sends it: one line of UTF-8 JSON.
///
/// Parsing checks the envelope only — `jsonrpc`, `id`, `method`, the kind of `params` — and
/// leaves the method and its params to ``RPCCall``, so a server can answer a valid envelope with
/// the right `id` whatever is wrong inside it.
public struct RPCRequest: Sendable, Equatable, LineEncodable {
    /// The id to echo in the response; `nil` for a notification. (`reeld` does not carry out
    /// notifications: it answers them with -32600 and a null id, see docs/PROTOCOL.md, rather than
    /// act on a request whose outcome the client could never learn.)
    public var id: RPCID?
    /// The method name, exactly as sent.
    public var method: String
    /// The params member: an object, an array, or `nil` when absent.
    public var params: JSONValue?

    /// Makes a request, as a client does before encoding it.
    ///
    /// - Parameters:
    ///   - id: The id, or `nil` for a notification.
    ///   - method: The method name.
    ///   - params: An object or array, or `nil` to omit the member.
    public init(id: RPCID?, method: String, params: JSONValue? = nil) {
        self.id = id
        self.method = method
        self.params = params
    }

    /// Whether this is a notification: no `id`.
    public var isNotification: Bool { id == nil }

    /// Parses one request line.
    ///
    /// The line may still end in `"\n"` or `"\r\n"` (JSON whitespace). An empty or blank line is a
    /// parse error like any other invalid JSON; a server that wants to be kind to people typing into
    /// `socat` can skip blank lines before calling this.
    ///
    /// JSON-RPC batches (a top-level array) are refused with -32600 and the message "batch
    /// requests are not supported; send one request per line": the protocol answers requests of
    /// a connection one by one in order, and pipelining lines gives a client the same throughput
    /// without a batch's all-at-once response. (An atomic group of *actions* is `dispatch` with
    /// `actions`.)
    ///
    /// - Parameters:
    ///   - line: The UTF-8 bytes of the line. Only read during the call.
    ///   - maxDepth: How deeply arrays and objects may nest.
    /// - Returns: The request, or the error response to send: -32700 with a `null` id for invalid
    ///   JSON; 1007 with a `null` id when the line nests deeper than `maxDepth`; -32600 for valid
    ///   JSON that is not a request, with the request's id when it could be read.
    public static func parse(
        _ line: UnsafeRawBufferPointer, maxDepth: Int = WireProtocol.defaultMaxDepth
    ) -> Result<RPCRequest, RPCErrorResponse> {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: line, maxDepth: maxDepth)
        } catch {
            if error.code == .tooDeep {
                return .failure(RPCErrorResponse(id: nil, error: RPCError(
                    code: RPCError.Code.tooLarge,
                    message: "the request nests arrays and objects deeper than \(maxDepth) levels"
                )))
            }
            return .failure(RPCErrorResponse(id: nil, error: .parseError(error.message)))
        }
        return Result { () throws(RPCErrorResponse) -> RPCRequest in try RPCRequest(validating: json) }
    }

    /// Parses one request line, as the `UnsafeRawBufferPointer` overload does.
    ///
    /// - Parameters:
    ///   - line: The UTF-8 bytes of the line.
    ///   - maxDepth: How deeply arrays and objects may nest.
    public static func parse(
        _ line: [UInt8], maxDepth: Int = WireProtocol.defaultMaxDepth
    ) -> Result<RPCRequest, RPCErrorResponse> {
        line.withUnsafeBytes { parse($0, maxDepth: maxDepth) }
    }

    /// Parses one request line given as text, as the `UnsafeRawBufferPointer` overload does.
    ///
    /// - Parameters:
    ///   - line: The line.
    ///   - maxDepth: How deeply arrays and objects may nest.
    public static func parse(
        _ line: String, maxDepth: Int = WireProtocol.defaultMaxDepth
    ) -> Result<RPCRequest, RPCErrorResponse> {
        parse(Array(line.utf8), maxDepth: maxDepth)
    }

    /// Checks that a parsed JSON value is a JSON-RPC 2.0 request object and reads it.
    ///
    /// Unknown top-level members are refused rather than ignored: a misspelt `"parms"` would
    /// otherwise run the method with no params (a `get` silently answering with the latest state
    /// instead of the state `at` a seq).
    ///
    /// - Parameter json: The whole message.
    /// - Throws: ``RPCErrorResponse`` with -32600, carrying the id when it could be read.
    public init(validating json: JSONValue) throws(RPCErrorResponse) {
        guard case .object(let members) = json else {
            if case .array = json {
                throw RPCErrorResponse(id: nil, error: .invalidRequest(
                    "batch requests are not supported; send one request per line"))
            }
            throw RPCErrorResponse(id: nil, error: .invalidRequest(
                "a request must be a JSON object such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}, not \(json.described)"))
        }
        var id: RPCID?
        if let rawID = members["id"] {
            guard let readable = RPCID(json: rawID) else {
                throw RPCErrorResponse(id: nil, error: .invalidRequest(
                    "id must be a string or an integer, not \(rawID.described) (omit it for a notification)"))
            }
            id = readable
        }
        func failure(_ message: String) -> RPCErrorResponse {
            RPCErrorResponse(id: id, error: .invalidRequest(message))
        }
        guard let version = members["jsonrpc"] else {
            throw failure("\"jsonrpc\": \"2.0\" is missing")
        }
        guard version == .string(WireProtocol.jsonRPCVersion) else {
            throw failure("jsonrpc must be the string \"2.0\", not \(version.jsonString)")
        }
        guard let rawMethod = members["method"] else {
            throw failure("method is missing")
        }
        guard case .string(let method) = rawMethod else {
            throw failure("method must be a string, not \(rawMethod.described)")
        }
        let params = members["params"]
        if let params {
            switch params {
            case .object, .array: break
            default: throw failure("params must be an object or an array, not \(params.described) (omit it for none)")
            }
        }
        // Every member read above is a known one: more members than that means an unknown one,
        // named (the first in sorted order, for a stable message) only then.
        let known = 2 + (id == nil ? 0 : 1) + (params == nil ? 0 : 1)  // (an id member is read or refused above)
        if members.count > known, let key = members.keys.filter({ !Self.members.contains($0) }).min() {
            throw failure("unknown member \(JSONValue.string(key).jsonString) in the request (a request has jsonrpc, id, method and params)")
        }
        self.init(id: id, method: method, params: params)
    }

    /// The members a request object may have.
    private static let members: Set<String> = ["jsonrpc", "id", "method", "params"]

    /// Appends the request as one line — `jsonrpc`, `id`, `method`, `params`, then `"\n"` — as a
    /// client sends it.
    ///
    /// - Parameter bytes: The buffer to append UTF-8 text to.
    public func encode(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"jsonrpc":"2.0""#.utf8)
        if let id {
            bytes.append(contentsOf: #","id":"#.utf8)
            id.serialize(into: &bytes)
        }
        bytes.append(contentsOf: #","method":"#.utf8)
        JSONValue.string(method).serialize(into: &bytes)
        if let params {
            bytes.append(contentsOf: #","params":"#.utf8)
            params.serialize(into: &bytes)
        }
        bytes.append(contentsOf: "}\n".utf8)
    }

}
