import ReelJSON

// The seam both ends share: each method of protocol 1 as a type that names its params and its
// result. The server writes results with `writeJSON(into:)` straight into the response line; the
// client reads them back with `init(result:)`. One type per message, so the two cannot drift.

/// The params of one method, as a client writes them and a server reads them.
public protocol MethodParams: Sendable, Equatable {
    /// Reads and checks the params of a request.
    /// - Throws: -32602 naming what does not fit the method.
    init(params: JSONValue?) throws(RPCError)
    /// The params as a client sends them; ``init(params:)`` reads them back.
    var jsonValue: JSONValue { get }
}

/// The result of one method: written by the server straight into bytes, read back by clients.
///
/// Writers put members in canonical order (see `JSONObjectMembers`), so the bytes are those of the
/// equal `JSONValue`. Readers ignore members they do not know (a newer server may add some) but
/// refuse a result without a member the protocol promises (docs/REFERENCE.md).
public protocol MethodResult: Sendable, JSONWritable {
    /// Reads a result as a server sent it.
    /// - Throws: -32600 naming the member that is missing or malformed.
    init(result: JSONValue) throws(RPCError)
}

/// One method of the protocol, declared once: its name, params and result types, the permission
/// it needs and whether a client may send it again. Everything else derives from this
/// declaration and ``Method/all``: the server's routing and its -32601 message, the `hello`
/// capabilities, the client's ``call`` and the offline path (docs/ARCHITECTURE.md, "Adding a
/// method").
///
/// ```swift
/// let snapshot = try await client.call(Method.Get.self, GetParams(path: "/todos"))
/// ```
public protocol ProtocolMethod: Sendable {
    associatedtype Params: MethodParams
    associatedtype Result: MethodResult
    /// The name on the wire.
    static var name: MethodName { get }
    /// What the peer must be allowed to do to call it; a daemon's access policy grants these.
    static var permission: Permission { get }
    /// Whether a client may send the call again after reconnecting when its answer was lost:
    /// reads may; `backup` may not (it would find its own half-made copy in the way); a
    /// `dispatch` only with an idempotency key, which the client decides per call. Reads: `true`.
    static var isSafeToResend: Bool { get }
    /// Whether this call may be sent again: ``isSafeToResend`` unless the params decide
    /// (`dispatch`: only with an idempotency key).
    static func isSafeToResend(_ params: Params) -> Bool
    /// Whether the call acts on its connection's own state (its subscriptions), so that only a
    /// connection can answer it. Default `false`.
    static var actsOnItsConnection: Bool { get }
    /// Whether `hello` lists the method's name among the capabilities (the methods added to
    /// protocol 1 after its first methods). Default `true`.
    static var isCapability: Bool { get }
}

extension ProtocolMethod {
    public static var isSafeToResend: Bool { true }
    public static func isSafeToResend(_ params: Params) -> Bool { isSafeToResend }
    public static var actsOnItsConnection: Bool { false }
    public static var isCapability: Bool { true }
}

/// The name of a method on the wire: `"get"`, `"dispatch"`…
public struct MethodName: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
}

/// The methods of protocol 1, one type each, and ``all``, the one list of them.
public enum Method {
    /// Every method of protocol 1, in the order `hello` and the -32601 message list them. Adding
    /// a method adds its type here; a server refuses to start while a method of this list is
    /// answered by nobody.
    public static let all: [any ProtocolMethod.Type] = [
        Hello.self, Dispatch.self, Get.self, Subscribe.self, Unsubscribe.self, History.self, Diff.self, Replay.self,
        Stats.self, Checkpoints.self, Verify.self, Backup.self, Bisect.self, Scan.self, Digest.self, Describe.self,
        Find.self,
        Blame.self,
        HandOver.self, TakeOverProgress.self,
        BranchCreate.self, Branches.self, BranchDelete.self,
    ]

    private static let byName: [String: any ProtocolMethod.Type] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.name.rawValue, $0) }
    )

    /// The method of that name, `nil` when protocol 1 has none.
    public static func named(_ name: String) -> (any ProtocolMethod.Type)? { byName[name] }

    public enum Hello: ProtocolMethod {
        public typealias Params = HelloParams
        public typealias Result = ServerHello
        public static let name: MethodName = "hello"
        public static let permission = Permission.read
        public static let isCapability = false
    }
    public enum Dispatch: ProtocolMethod {
        public typealias Params = DispatchParams
        public typealias Result = DispatchOutcome
        public static let name: MethodName = "dispatch"
        public static let permission = Permission.dispatch
        public static let isSafeToResend = false
        public static let isCapability = false
        /// A dispatch with an idempotency key: the daemon answers a repeat with the first seq.
        public static func isSafeToResend(_ params: DispatchParams) -> Bool { params.idempotencyKey != nil }
    }
    public enum Get: ProtocolMethod {
        public typealias Params = GetParams
        public typealias Result = Snapshot<JSONValue>
        public static let name: MethodName = "get"
        public static let permission = Permission.read
        public static let isCapability = false
    }
    public enum Subscribe: ProtocolMethod {
        public typealias Params = SubscribeParams
        public typealias Result = SubscribeResult
        public static let name: MethodName = "subscribe"
        public static let permission = Permission.read
        public static let isCapability = false
        public static let actsOnItsConnection = true
    }
    public enum Unsubscribe: ProtocolMethod {
        public typealias Params = UnsubscribeParams
        public typealias Result = UnsubscribeResult
        public static let name: MethodName = "unsubscribe"
        public static let permission = Permission.read
        public static let isCapability = false
        public static let actsOnItsConnection = true
    }
    public enum History: ProtocolMethod {
        public typealias Params = HistoryParams
        public typealias Result = HistoryPage
        public static let name: MethodName = "history"
        public static let permission = Permission.read
    }
    public enum Diff: ProtocolMethod {
        public typealias Params = DiffParams
        public typealias Result = DiffResult
        public static let name: MethodName = "diff"
        public static let permission = Permission.read
    }
    public enum Replay: ProtocolMethod {
        public typealias Params = ReplayParams
        public typealias Result = ReplayResult
        public static let name: MethodName = "replay"
        public static let permission = Permission.read
    }
    public enum Stats: ProtocolMethod {
        public typealias Params = StatsParams
        public typealias Result = StatsResult
        public static let name: MethodName = "stats"
        public static let permission = Permission.admin
        public static let isCapability = false
    }
    public enum Checkpoints: ProtocolMethod {
        public typealias Params = CheckpointsParams
        public typealias Result = CheckpointList
        public static let name: MethodName = "checkpoints"
        public static let permission = Permission.read
    }
    public enum Verify: ProtocolMethod {
        public typealias Params = VerifyParams
        public typealias Result = VerifyOutcome
        public static let name: MethodName = "verify"
        public static let permission = Permission.admin
    }
    public enum Backup: ProtocolMethod {
        public typealias Params = BackupParams
        public typealias Result = BackupOutcome
        public static let name: MethodName = "backup"
        public static let permission = Permission.admin
        public static let isSafeToResend = false
    }
    public enum Bisect: ProtocolMethod {
        public typealias Params = BisectParams
        public typealias Result = BisectOutcome
        public static let name: MethodName = "bisect"
        public static let permission = Permission.read
    }
    public enum Scan: ProtocolMethod {
        public typealias Params = ScanParams
        public typealias Result = ScanOutcome
        public static let name: MethodName = "scan"
        public static let permission = Permission.admin
    }
}

/// A raw result: what a client gets from a method it has no type for, and what a server may
/// answer with when the shape is open.
extension JSONValue: MethodResult {
    public init(result: JSONValue) throws(RPCError) { self = result }
}

/// A success response whose result is written straight into the line, with no `JSONValue` tree
/// on the way: `{"jsonrpc":"2.0","id":…,"result":…}`, the same bytes as ``RPCResponse`` writes
/// for the equal value.
public struct RPCSuccess<Result: MethodResult>: Sendable, LineEncodable {
    public var id: RPCID
    public var result: Result

    public init(id: RPCID, result: Result) {
        self.id = id
        self.result = result
    }

    public func encode(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        id.serialize(into: &bytes)
        bytes.append(contentsOf: #","result":"#.utf8)
        result.writeJSON(into: &bytes)
        bytes.append(contentsOf: "}\n".utf8)
    }
}

extension HelloParams: MethodParams {}
extension DispatchParams: MethodParams {}
extension GetParams: MethodParams {}
extension SubscribeParams: MethodParams {}
extension UnsubscribeParams: MethodParams {}
extension HistoryParams: MethodParams {}
extension DiffParams: MethodParams {}
extension ReplayParams: MethodParams {}
extension StatsParams: MethodParams {}
extension CheckpointsParams: MethodParams {}
extension VerifyParams: MethodParams {}
extension BackupParams: MethodParams {}
extension BisectParams: MethodParams {}
extension ScanParams: MethodParams {}
