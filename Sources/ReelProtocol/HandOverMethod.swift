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

/// The `handOver` result: `{seq, watchdogMicroseconds?}`, the latest seq when the socket was
/// sent, and the timeout of systemd's watchdog when the daemon feeds one (the newcomer, becoming
/// the unit's main process, feeds it in its place). The daemon goes on committing what it had
/// accepted; the newcomer opens the store after it has stopped.
public struct HandOverResult: MethodResult, Equatable {
    public var seq: UInt64
    public var watchdogMicroseconds: UInt64?

    public init(seq: UInt64, watchdogMicroseconds: UInt64? = nil) {
        self.seq = seq
        self.watchdogMicroseconds = watchdogMicroseconds
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("seq", seq)
            members.add("watchdogMicroseconds", ifPresent: watchdogMicroseconds)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a handOver result")
        let watchdog = members.members["watchdogMicroseconds"]?.intValue.flatMap(UInt64.init(exactly:))
        self.init(seq: try members.seq("seq"), watchdogMicroseconds: watchdog)
    }
}

// `takeOverProgress`: a daemon folding beside this one to take it over reports how far it got,
// so that this one's `stats` (and metrics) show it.

extension Method {
    public enum TakeOverProgress: ProtocolMethod {
        public typealias Params = TakeOverProgressReport
        public typealias Result = TakeOverProgressAcknowledgement
        public static let name: MethodName = "takeOverProgress"
        public static let permission = Permission.admin
    }
}

/// How far a take-over's fold got: the params of `takeOverProgress`, and the `takeOver` member of
/// the served daemon's `stats`: `{reducer, folded, latest, remainingSeconds?}`.
public struct TakeOverProgressReport: MethodParams {
    /// The newcomer's reducer, `name@version`.
    public var reducer: String
    /// The seq its fold reached.
    public var folded: UInt64
    /// The latest seq of the log it folds towards.
    public var latest: UInt64
    /// Its estimate of the fold's remaining time, when it has one.
    public var remainingSeconds: Double?

    public init(reducer: String, folded: UInt64, latest: UInt64, remainingSeconds: Double? = nil) {
        self.reducer = reducer
        self.folded = folded
        self.latest = latest
        self.remainingSeconds = remainingSeconds
    }

    /// - Throws: -32602 without `reducer`, `folded` and `latest`, or with another member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.TakeOverProgress.name, allowed: ["reducer", "folded", "latest", "remainingSeconds"])
        guard let reducer = try reader.string("reducer"), let folded = try reader.seq("folded"), let latest = try reader.seq("latest") else {
            throw .invalidParams("takeOverProgress needs 'reducer', 'folded' and 'latest'")
        }
        var remaining: Double?
        if let value = reader["remainingSeconds"] {
            guard let seconds = value.doubleValue, seconds >= 0 else {
                throw .invalidParams("params.remainingSeconds must be a non-negative number, not \(value.described)")
            }
            remaining = seconds
        }
        self.init(reducer: reducer, folded: folded, latest: latest, remainingSeconds: remaining)
    }

    public var jsonValue: JSONValue {
        var members: JSONObject = [
            "reducer": .string(reducer), "folded": JSONValue(seq: folded), "latest": JSONValue(seq: latest),
        ]
        if let remainingSeconds { members["remainingSeconds"] = .double(remainingSeconds) }
        return .object(members)
    }
}

extension TakeOverProgressReport {
    /// `folded seq 120000 of 1000000, about 8 s left`, for people.
    public static func describe(_ report: TakeOverProgressReport) -> String {
        let left = report.remainingSeconds.map { $0 < 1 ? ", level" : ", about \(Int($0.rounded())) s left" } ?? ""
        return "folded seq \(report.folded) of \(report.latest)\(left)"
    }
}

/// The `takeOverProgress` result: `{}`.
public struct TakeOverProgressAcknowledgement: MethodResult, Equatable {
    public init() {}

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { _ in }
    }

    public init(result: JSONValue) throws(RPCError) {
        _ = try ResultReader(result, "a takeOverProgress result")
    }
}
