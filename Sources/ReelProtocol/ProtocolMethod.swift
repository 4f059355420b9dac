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
/// refuse a result without a member SPEC.md promises.
public protocol MethodResult: Sendable, JSONWritable {
    /// Reads a result as a server sent it.
    /// - Throws: -32600 naming the member that is missing or malformed.
    init(result: JSONValue) throws(RPCError)
}

/// One method of the protocol: its name, params and result types.
///
/// ```swift
/// let snapshot = try await client.call(Method.Get.self, GetParams(path: "/todos"))
/// ```
public protocol ProtocolMethod {
    associatedtype Params: MethodParams
    associatedtype Result: MethodResult
    /// The name on the wire.
    static var name: MethodName { get }
}

/// The methods of protocol 1, one type each. Adding a method adds one here; the server's and the
/// client's exhaustive switches over ``MethodName`` then point to what else it needs.
public enum Method {
    public enum Hello: ProtocolMethod {
        public typealias Params = HelloParams
        public typealias Result = ServerHello
        public static let name = MethodName.hello
    }
    public enum Dispatch: ProtocolMethod {
        public typealias Params = DispatchParams
        public typealias Result = DispatchOutcome
        public static let name = MethodName.dispatch
    }
    public enum Get: ProtocolMethod {
        public typealias Params = GetParams
        public typealias Result = Snapshot<JSONValue>
        public static let name = MethodName.get
    }
    public enum Subscribe: ProtocolMethod {
        public typealias Params = SubscribeParams
        public typealias Result = SubscribeResult
        public static let name = MethodName.subscribe
    }
    public enum Unsubscribe: ProtocolMethod {
        public typealias Params = UnsubscribeParams
        public typealias Result = UnsubscribeResult
        public static let name = MethodName.unsubscribe
    }
    public enum History: ProtocolMethod {
        public typealias Params = HistoryParams
        public typealias Result = HistoryPage
        public static let name = MethodName.history
    }
    public enum Diff: ProtocolMethod {
        public typealias Params = DiffParams
        public typealias Result = DiffResult
        public static let name = MethodName.diff
    }
    public enum Replay: ProtocolMethod {
        public typealias Params = ReplayParams
        public typealias Result = ReplayResult
        public static let name = MethodName.replay
    }
    public enum Stats: ProtocolMethod {
        public typealias Params = StatsParams
        public typealias Result = StatsResult
        public static let name = MethodName.stats
    }
    public enum Checkpoints: ProtocolMethod {
        public typealias Params = CheckpointsParams
        public typealias Result = CheckpointList
        public static let name = MethodName.checkpoints
    }
    public enum Verify: ProtocolMethod {
        public typealias Params = VerifyParams
        public typealias Result = VerifyOutcome
        public static let name = MethodName.verify
    }
    public enum Backup: ProtocolMethod {
        public typealias Params = BackupParams
        public typealias Result = BackupOutcome
        public static let name = MethodName.backup
    }
    public enum Bisect: ProtocolMethod {
        public typealias Params = BisectParams
        public typealias Result = BisectOutcome
        public static let name = MethodName.bisect
    }
    public enum Scan: ProtocolMethod {
        public typealias Params = ScanParams
        public typealias Result = ScanOutcome
        public static let name = MethodName.scan
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
