import ReelJSON

// `handOver` (an addition to protocol 1): the running daemon gives its listening socket to a
// newer one that has folded the same data directory beside it (`serve --take-over`), then stops
// as at SIGTERM, without its shutdown checkpoint and leaving the socket's file to the newcomer.

extension Method {
    public enum HandOver: ProtocolMethod {
        public typealias Params = HandOverParams
        public typealias Result = HandOverResult
        public static let name: MethodName = "handOver"
        public static let permission = Permission.admin
        /// A second hand-over would find the first one's daemon stopping.
        public static let isSafeToResend = false
    }
}

/// The params of `handOver`: `{receiver}`, the path of a Unix socket the new daemon listens on,
/// to which the running one sends its listening socket (`SCM_RIGHTS`).
public struct HandOverParams: MethodParams {
    public var receiver: String

    public init(receiver: String) {
        self.receiver = receiver
    }

    /// - Throws: -32602 without a non-empty `receiver`, or with another member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.HandOver.name, allowed: ["receiver"])
        guard let receiver = try reader.string("receiver"), !receiver.isEmpty else {
            throw .invalidParams("handOver needs 'receiver': the path of the Unix socket to send the listening socket to")
        }
        self.receiver = receiver
    }

    public var jsonValue: JSONValue { ["receiver": .string(receiver)] }
}

/// The `handOver` result: `{seq}`, the latest seq when the socket was sent. The daemon goes on
/// committing what it had accepted; the newcomer opens the store after it has stopped.
public struct HandOverResult: MethodResult, Equatable {
    public var seq: UInt64

    public init(seq: UInt64) {
        self.seq = seq
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in members.add("seq", seq) }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a handOver result")
        self.init(seq: try members.seq("seq"))
    }
}
