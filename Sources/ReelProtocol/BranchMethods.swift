import ReelCore
import ReelJSON

// Branches of the history (additions to protocol 1): `branchCreate` forks the main history at a
// seq without copying it, `branches` lists them, `branchDelete` removes one. `dispatch`, `get`,
// `digest`, `history`, `diff` and `subscribe` take `branch` to act on one instead of the main
// history.

extension Method {
    public enum BranchCreate: ProtocolMethod {
        public typealias Params = BranchCreateParams
        public typealias Result = BranchInfoResult
        public static let name: MethodName = "branchCreate"
        public static let permission = Permission.dispatch
        public static let isSafeToResend = false
    }
    public enum Branches: ProtocolMethod {
        public typealias Params = BranchesParams
        public typealias Result = BranchList
        public static let name: MethodName = "branches"
        public static let permission = Permission.read
    }
    public enum BranchDelete: ProtocolMethod {
        public typealias Params = BranchDeleteParams
        public typealias Result = BranchDeleteResult
        public static let name: MethodName = "branchDelete"
        public static let permission = Permission.dispatch
        public static let isSafeToResend = false
    }
}

extension ParamsReader {
    /// An optional member naming a branch (``BranchName``): `branch` unless said otherwise.
    func branch(_ member: String = "branch") throws(RPCError) -> String? {
        guard let name = try string(member) else { return nil }
        if let problem = BranchName.problem(name) { throw .invalidParams("params.\(member): \(problem)") }
        return name
    }
}

/// The params of `branchCreate`: `{name, at}`.
public struct BranchCreateParams: MethodParams {
    public var name: String
    /// The seq of the main history the branch starts after.
    public var at: UInt64

    public init(name: String, at: UInt64) {
        (self.name, self.at) = (name, at)
    }

    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.BranchCreate.name, allowed: ["name", "at"])
        guard let name = try reader.string("name") else { throw .invalidParams("branchCreate needs 'name', such as {\"name\": \"experiment\", \"at\": 120}") }
        if let problem = BranchName.problem(name) { throw .invalidParams("params.name: \(problem)") }
        self.name = name
        at = try reader.requiredSeq("at", method: Method.BranchCreate.name)
    }

    public var jsonValue: JSONValue { ["name": .string(name), "at": JSONValue(seq: at)] }
}

/// The params of `branches`: `{}`.
public struct BranchesParams: MethodParams {
    public init() {}
    public init(params: JSONValue?) throws(RPCError) {
        _ = try ParamsReader(params, method: Method.Branches.name, allowed: [])
    }
    public var jsonValue: JSONValue { [:] }
}

/// The params of `branchDelete`: `{name}`.
public struct BranchDeleteParams: MethodParams {
    public var name: String

    public init(name: String) { self.name = name }

    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.BranchDelete.name, allowed: ["name"])
        guard let name = try reader.string("name") else { throw .invalidParams("branchDelete needs 'name'") }
        self.name = name
    }

    public var jsonValue: JSONValue { ["name": .string(name)] }
}

/// A branch: `{name, at, seq, created}`: the seq it forks after, the seq of its last action (`at`
/// while it has none), when it was made.
public struct BranchInfoResult: MethodResult, Equatable {
    public var name: String
    public var at: UInt64
    public var seq: UInt64
    public var created: Timestamp

    public init(name: String, at: UInt64, seq: UInt64, created: Timestamp) {
        (self.name, self.at, self.seq, self.created) = (name, at, seq, created)
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("at", at)
            members.add("created", created.rfc3339)
            members.add("name", name)
            members.add("seq", seq)
        }
    }

    public var jsonValue: JSONValue {
        ["at": JSONValue(seq: at), "created": .string(created.rfc3339), "name": .string(name), "seq": JSONValue(seq: seq)]
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a branch")
        let created = try members.string("created")
        guard let time = Timestamp(rfc3339: created) else { throw .invalidRequest("a branch's created is not an RFC 3339 time: \(created)") }
        self.init(name: try members.string("name"), at: try members.seq("at"), seq: try members.seq("seq"), created: time)
    }
}

/// The `branches` result: `{branches: [{name, at, seq, created}]}`, by name.
public struct BranchList: MethodResult, Equatable {
    public var branches: [BranchInfoResult]

    public init(branches: [BranchInfoResult]) { self.branches = branches }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("branches") { bytes in
                bytes.append(UInt8(ascii: "["))
                for (index, branch) in branches.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    branch.writeJSON(into: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            }
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        guard case .object(let members) = result, case .array(let elements)? = members["branches"] else {
            throw .invalidRequest("a branches result has a 'branches' array")
        }
        var branches: [BranchInfoResult] = []
        for element in elements { branches.append(try BranchInfoResult(result: element)) }
        self.init(branches: branches)
    }
}

/// The `branchDelete` result: `{}`.
public struct BranchDeleteResult: MethodResult, Equatable {
    public init() {}
    public func writeJSON(into bytes: inout [UInt8]) { bytes += Array("{}".utf8) }
    public init(result: JSONValue) throws(RPCError) {}
}
