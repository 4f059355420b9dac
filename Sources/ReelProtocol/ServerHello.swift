import ReelCore
import ReelJSON

/// Who the daemon is and what it offers: the result of `hello`, sent on every connection.
/// `{capabilities, protocol, reducer: {name, version}, seq, server, version}`.
public struct ServerHello: MethodResult, Equatable {
    /// The server's name, `"reeld"`.
    public var server: String
    /// The daemon's version, such as `"0.1.0"`.
    public var version: String
    /// The protocol version the daemon speaks (1).
    public var protocolVersion: Int
    /// The latest seq when the daemon answered.
    public var seq: UInt64
    /// The reducer the store runs and its version (`reel.json` version `1` for the stock one).
    public var reducer: ReducerIdentity
    /// The optional features the daemon offers, by name (see ``Capability``).
    public var capabilities: [String]
    /// What this connection's peer may do under the daemon's access policy: some of `"read"`,
    /// `"dispatch"`, `"admin"` (so a tool can offer only what will be allowed). `nil` from a
    /// daemon that does not say.
    public var permissions: [String]?
    /// With `reeld --shared-log`: how far this node is behind the shared log, and whether it is
    /// reachable. `nil` from a daemon without one.
    public var sharedLog: SharedLogReport?

    /// - Parameters:
    ///   - server: The server's name; ``WireProtocol/serverName`` by default.
    ///   - version: The daemon's version, such as `"0.1.0"`.
    ///   - protocolVersion: The protocol spoken; ``WireProtocol/version`` by default.
    ///   - seq: The latest committed seq.
    ///   - reducer: The store's reducer name and version.
    ///   - capabilities: The features offered; every one of protocol 1 by default.
    public init(
        server: String = WireProtocol.serverName, version: String, protocolVersion: Int = WireProtocol.version,
        seq: UInt64, reducer: ReducerIdentity, capabilities: [String] = Capability.all, permissions: [String]? = nil
    ) {
        self.permissions = permissions
        self.server = server
        self.version = version
        self.protocolVersion = protocolVersion
        self.seq = seq
        self.reducer = reducer
        self.capabilities = capabilities
    }

    /// Whether the daemon offers a feature.
    ///
    /// - Parameter capability: A capability of protocol 1.
    public func supports(_ capability: Capability) -> Bool {
        capabilities.contains(capability.rawValue)
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("capabilities", capabilities)
            if let permissions { members.add("permissions", permissions) }
            members.add("protocol", protocolVersion)
            members.add("reducer", writing: reducer.writeJSON)
            members.add("seq", seq)
            members.add("server", server)
            if let sharedLog { members.add("sharedLog", writing: sharedLog.jsonValue.serialize(into:)) }
            members.add("version", version)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a hello result")
        var capabilities: [String] = []
        for capability in try members.optionalArray("capabilities") {
            guard case .string(let name) = capability else {
                throw .invalidRequest("a hello result's capabilities must be strings, not \(capability.described)")
            }
            capabilities.append(name)
        }
        var permissions: [String]?
        if members.members["permissions"] != nil {
            permissions = []
            for permission in try members.optionalArray("permissions") {
                guard case .string(let name) = permission else {
                    throw .invalidRequest("a hello result's permissions must be strings, not \(permission.described)")
                }
                permissions?.append(name)
            }
        }
        self.init(
            server: try members.string("server"), version: try members.string("version"),
            protocolVersion: Int(clamping: try members.int("protocol")), seq: try members.seq("seq"),
            reducer: try ReducerIdentity(wire: try members.value("reducer"), "a hello result's reducer"),
            capabilities: capabilities, permissions: permissions
        )
        if let report = members.members["sharedLog"], !report.isNull {
            sharedLog = try SharedLogReport(json: report)
        }
    }
}

extension ReducerIdentity {
    /// `{name, version}`, as `hello` and `checkpoints` carry it.
    func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("name", name)
            members.add("version", version)
        }
    }

    init(wire json: JSONValue, _ what: String) throws(RPCError) {
        let members = try ResultReader(json, what)
        self.init(name: try members.string("name"), version: try members.string("version"))
    }
}
