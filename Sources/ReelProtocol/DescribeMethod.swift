import ReelCore
import ReelJSON

// `describe`: what the store's reducer is and what each action type accepts, so a client, the
// page's dispatch form or a person at `reel describe` can write a payload without reading the
// reducer's code.

extension Method {
    public enum Describe: ProtocolMethod {
        public typealias Params = DescribeParams
        public typealias Result = StoreDescription
        public static let name: MethodName = "describe"
        public static let permission = Permission.read
    }
}

/// The params of `describe`: none, `{}`.
public struct DescribeParams: MethodParams {
    public init() {}

    /// - Throws: -32602 for any member, or positional params.
    public init(params: JSONValue?) throws(RPCError) {
        _ = try ParamsReader(params, method: Method.Describe.name, allowed: [])
    }

    public var jsonValue: JSONValue { .object([:]) }
}

/// The `describe` result: `{reducer: {name, version}, actions: [{type, version, versions, schema,
/// example}]}`, the reducers' action types sorted by type, then the store's own (`@revert`).
/// `version` is the one the reducers read, `versions` every one the store accepts (upcast to
/// `version`), ascending.
public struct StoreDescription: MethodResult, Equatable {
    public var reducer: ReducerIdentity
    public var actions: [ActionDescription]

    public init(reducer: ReducerIdentity, actions: [ActionDescription]) {
        self.reducer = reducer
        self.actions = actions
    }

    /// The description of one action type, `nil` when the store has no such type.
    public func action(_ type: String) -> ActionDescription? {
        actions.first { $0.type == type }
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("actions", actions)
            members.add("reducer", writing: reducer.writeJSON)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a describe result")
        var actions: [ActionDescription] = []
        for element in try members.array("actions") {
            actions.append(try ActionDescription(wire: element))
        }
        self.init(
            reducer: try ReducerIdentity(wire: try members.value("reducer"), "a describe result's reducer"), actions: actions
        )
    }
}

extension ActionDescription: JSONWritable {
    /// `{example, schema, type, version, versions}`, members in canonical order.
    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("example", example)
            members.add("schema", schema)
            members.add("type", type)
            members.add("version", Int64(version))
            members.add("versions", readableVersions.map { Int64($0) })
        }
    }

    /// Reads a described type. The upcasters of the older versions it lists run in the store
    /// only: here they stand for the versions and refuse to run.
    init(wire: JSONValue) throws(RPCError) {
        let members = try ResultReader(wire, "an action of a describe result")
        guard let version = Int(exactly: try members.int("version")) else {
            throw .invalidRequest("an action of a describe result needs version (an integer)")
        }
        var older: [Int] = []
        // Absent from a server that predates versions: only `version` is read.
        if let listed = members.members["versions"] {
            guard case .array(let elements) = listed,
                let versions = Optional(elements.compactMap { $0.intValue.flatMap { Int(exactly: $0) } }),
                versions.count == elements.count, versions.contains(version)
            else {
                throw .invalidRequest("an action of a describe result has versions that are not integers including its version")
            }
            older = versions.filter { $0 < version }
        }
        self.init(
            type: try members.string("type"), version: version, schema: try members.value("schema"),
            example: try members.value("example"),
            upcasters: older.map { from in
                Upcaster(from: from) { _ throws(ReducerError) in throw .rejected("upcasters run in the store") }
            }
        )
    }
}
