import ReelJSON

/// A JSON-RPC error object, `{"code", "message", "data"?}`: the one error type of `ReelProtocol`.
///
/// Codes are stable numbers (docs/REFERENCE.md, "Errors"); the message is a sentence a person can act on and
/// never a Swift type dump. `data` carries machine-readable details where the protocol promises
/// them, such as the current seq of a failed `expectedSeq` check.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The numeric code; one of ``RPCError/Code``'s constants for every error Reel sends.
    public var code: Int
    /// What went wrong and, where it helps, what to do about it.
    public var message: String
    /// Details for programs; `nil` omits the member.
    public var data: JSONValue?

    /// Makes an error object.
    ///
    /// - Parameters:
    ///   - code: The numeric code, normally one of ``RPCError/Code``'s constants.
    ///   - message: A sentence a person can act on.
    ///   - data: Details for programs, or `nil` for none.
    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// `"error <code>: <message>"`, for logs.
    public var description: String { "error \(code): \(message)" }

    /// The error object as a JSON value (member order is lost; use ``serialize(into:)`` on the wire).
    public var jsonValue: JSONValue {
        var members: JSONObject = ["code": .int(Int64(code)), "message": .string(message)]
        if let data { members["data"] = data }
        return .object(members)
    }

    /// Appends the error object to `bytes` with its members in the order `code`, `message`, `data`,
    /// which people reading a socket expect (a canonical, sorted object would put `data` first).
    ///
    /// - Parameter bytes: The buffer to append UTF-8 text to.
    public func serialize(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"code":"#.utf8)
        JSONValue.int(Int64(code)).serialize(into: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        JSONValue.string(message).serialize(into: &bytes)
        if let data {
            bytes.append(contentsOf: #","data":"#.utf8)
            data.serialize(into: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
    }
}

extension RPCError {
    /// The error codes of protocol version 1. Their numbers never change; new ones may be added.
    public enum Code {
        /// -32700: the line is not valid JSON (RFC 8259), or not UTF-8.
        public static let parseError = -32700
        /// -32600: valid JSON, but not a JSON-RPC 2.0 request object (or a batch, which Reel does not take).
        public static let invalidRequest = -32600
        /// -32601: no method of that name.
        public static let methodNotFound = -32601
        /// -32602: the method exists but its params are missing, of the wrong type or out of range.
        public static let invalidParams = -32602
        /// -32603: a failure inside the server that fits no other code (a bug, not the request).
        public static let internalError = -32603
        /// 1001: the reducer (or middleware) rejected the action; nothing was logged.
        public static let rejected = 1001
        /// 1002: no reducer handles the action's type.
        public static let unknownActionType = 1002
        /// 1003: `expectedSeq` is not the latest seq; `data` is `{"seq": latest}`.
        public static let seqMismatch = 1003
        /// 1004: this peer may not do this.
        public static let permissionDenied = 1004
        /// 1005: the path does not exist in the state.
        public static let pathNotFound = 1005
        /// 1006: a seq outside 0…latest.
        public static let seqOutOfRange = 1006
        /// 1007: a line, message or value over a configured limit.
        public static let tooLarge = 1007
        /// 1008: overloaded, or a limit on connections or subscriptions reached.
        public static let overloaded = 1008
        /// 1009: the daemon is shutting down.
        public static let shuttingDown = 1009
        /// 1010: storage failed; the action was not made durable and is not acknowledged.
        public static let storageFailure = 1010
    }
}

extension RPCError {
    /// -32700 for a line that is not valid JSON.
    ///
    /// - Parameter detail: What the parser found, with its byte offset.
    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: Code.parseError, message: "invalid JSON: \(detail); send one JSON-RPC 2.0 request object per line")
    }

    /// -32600 for valid JSON that is not a request object.
    ///
    /// - Parameter message: Which rule the message broke.
    public static func invalidRequest(_ message: String) -> RPCError {
        RPCError(code: Code.invalidRequest, message: message)
    }

    /// -32601 for a method name the server does not know; the message lists those it does.
    ///
    /// - Parameter method: The name the client sent.
    public static func methodNotFound(_ method: String) -> RPCError {
        let known = Method.all.map { $0.name.rawValue }.joined(separator: ", ")
        return RPCError(
            code: Code.methodNotFound,
            message: "unknown method \(JSONValue.string(method).jsonString); protocol \(WireProtocol.version) has: \(known)"
        )
    }

    /// -32602 for params that do not fit the method.
    ///
    /// - Parameter message: Which member is wrong and what it must be, e.g.
    ///   `"params.expectedSeq must be a non-negative integer, not -1"`.
    public static func invalidParams(_ message: String) -> RPCError {
        RPCError(code: Code.invalidParams, message: message)
    }

    /// 1003 for a dispatch whose `expectedSeq` is stale, with the latest seq in `data` as
    /// `{"seq": current}` so a client can re-read and retry without another round trip.
    ///
    /// - Parameters:
    ///   - expected: The `expectedSeq` the client sent.
    ///   - current: The latest seq when the dispatch was refused.
    public static func seqMismatch(expected: UInt64, current: UInt64) -> RPCError {
        RPCError(
            code: Code.seqMismatch,
            message: "expectedSeq is \(expected) but the latest seq is \(current); read the state again and retry",
            data: ["seq": JSONValue(seq: current)]
        )
    }

    /// 1007 for a line over the server's limit. The server sends it with a `null` id (the line is
    /// not read, so its id is unknown) and then closes the connection, as the protocol requires (docs/REFERENCE.md): the rest
    /// of an oversized line cannot be told apart from the next request.
    ///
    /// - Parameter limit: The limit in bytes, also given in `data` as `{"limit": bytes}`.
    public static func lineTooLong(limit: Int) -> RPCError {
        RPCError(
            code: Code.tooLarge,
            message: "request line longer than the limit of \(limit) bytes; the connection is closed (split large batches)",
            data: ["limit": .int(Int64(limit))]
        )
    }

    /// 1009, sent to requests that arrive while the daemon stops.
    public static let shuttingDown = RPCError(
        code: Code.shuttingDown, message: "the daemon is shutting down; reconnect once it is back"
    )
}

extension JSONValue {
    /// A seq as a JSON integer. Seqs count actions one by one and never come near `Int64.max`;
    /// clamping keeps the conversion total instead of trapping.
    ///
    /// - Parameter seq: The sequence number.
    public init(seq: UInt64) {
        self = .int(Int64(clamping: seq))
    }
}
