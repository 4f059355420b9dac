import ReelJSON
import ReelProtocol

/// The one error type of `ReelClient`: what went wrong, in words a person can act on, with a code
/// a program can switch on and, for errors the daemon answered, its protocol error intact.
///
/// ```swift
/// do {
///     try await client.dispatch(action, expectedSeq: seq)
/// } catch where error.code == .serverError && error.rpcCode == RPCError.Code.seqMismatch {
///     // someone else committed first: re-read at error.serverError?.data?["seq"] and decide again
/// }
/// ```
public struct ReelClientError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Opaque and extensible: compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The code's name, such as `"connectionLost"`.
        public var description: String { name }

        /// The daemon answered with a protocol error; ``ReelClientError/serverError`` holds it.
        public static let serverError = Code("serverError")
        /// No connection could be made (or made again, within the reconnect policy).
        public static let connectionFailed = Code("connectionFailed")
        /// The connection dropped while a request that is not safe to resend was in flight: a
        /// dispatch without an idempotency key (or a raw call) may or may not have been carried out.
        public static let connectionLost = Code("connectionLost")
        /// The client was closed, before or while the request waited.
        public static let closed = Code("closed")
        /// The server sent something protocol version 1 does not allow.
        public static let protocolViolation = Code("protocolViolation")
        /// The calling task was cancelled before its request was sent.
        public static let cancelled = Code("cancelled")
        /// A Swift value could not be turned into JSON (an action payload).
        public static let encodingFailed = Code("encodingFailed")
        /// The daemon's JSON did not decode as the requested Swift type.
        public static let decodingFailed = Code("decodingFailed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened and, where it helps, what to do about it.
    public var message: String
    /// The daemon's error object (code, message, data) when ``code`` is ``Code/serverError``; also
    /// set on ``Code/connectionFailed`` when the daemon refused the `hello` handshake.
    public var serverError: RPCError?
    /// What caused this, when it came from below (a socket error, a JSON error).
    public var underlying: (any Error & Sendable)?

    /// Makes an error.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A sentence a person can act on.
    ///   - serverError: The daemon's error object, if it answered with one.
    ///   - underlying: The cause, if any.
    public init(_ code: Code, _ message: String, serverError: RPCError? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.serverError = serverError
        self.underlying = underlying
    }

    /// The protocol error code the daemon answered with (such as `RPCError.Code.seqMismatch`, 1003),
    /// or `nil` when the daemon did not answer with an error.
    public var rpcCode: Int? { serverError?.code }

    /// `"<code>: <message>"`, for logs.
    public var description: String { "\(code): \(message)" }
}

extension ReelClientError {
    /// The daemon refused a request; its code, message and data are kept as they came.
    static func server(_ error: RPCError, method: String) -> ReelClientError {
        ReelClientError(.serverError, "\(method) failed with error \(error.code): \(error.message)", serverError: error)
    }

    /// A request that may have been carried out was in flight when the connection dropped.
    static func outcomeUnknown(method: String, reason: String) -> ReelClientError {
        ReelClientError(
            .connectionLost,
            "the connection to the daemon was lost (\(reason)) before '\(method)' was answered: it may or may not have been carried out. "
                + "Give dispatches an idempotency key so the client can resend them safely, or look in history."
        )
    }

    /// The client was closed by its owner.
    static let closedByOwner = ReelClientError(.closed, "the client was closed; connect a new one to talk to the daemon again")

    /// The calling task was cancelled while its request still waited to be sent.
    static let cancelledBeforeSending = ReelClientError(
        .cancelled, "the calling task was cancelled before the request was sent; nothing was carried out")

    /// The server sent something that does not fit the protocol.
    static func violation(_ message: String) -> ReelClientError {
        ReelClientError(.protocolViolation, "the daemon sent \(message); is it a reeld speaking protocol 1?")
    }
}
