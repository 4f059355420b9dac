import ReelJSON

/// The params of `hello`: `{client?: string, protocol?: 1}`.
///
/// `hello` is optional: a client may call any method first. Sending it with `protocol` is how a
/// client makes sure it speaks the server's protocol before doing anything that changes state.
public struct HelloParams: Sendable, Equatable {
    /// A free-form name of the client (for logs and `stats`), such as `"reel 0.1"`.
    public var client: String?
    /// The protocol version the client speaks; `nil` when it did not say.
    public var protocolVersion: Int?

    /// - Parameters:
    ///   - client: The client's name, or `nil`.
    ///   - protocolVersion: The protocol version the client speaks, or `nil`.
    public init(client: String? = nil, protocolVersion: Int? = nil) {
        self.client = client
        self.protocolVersion = protocolVersion
    }

    /// Reads and checks the params of a `hello` call.
    ///
    /// - Parameter params: The request's `params`, `nil` when absent.
    /// - Throws: -32602 for a member of the wrong type, an unknown member, or a protocol version
    ///   this server does not speak; then `data` is `{"supported": [1]}`.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Hello.name, allowed: ["client", "protocol"])
        client = try reader.string("client")
        if let value = reader["protocol"] {
            guard let version = value.intValue else {
                throw .invalidParams("params.protocol must be an integer protocol version, not \(value.described)")
            }
            guard WireProtocol.supportedVersions.contains(Int(clamping: version)) else {
                let supported = WireProtocol.supportedVersions.map(String.init).joined(separator: ", ")
                throw RPCError(
                    code: RPCError.Code.invalidParams,
                    message: "protocol version \(version) is not supported; this server speaks protocol \(supported)",
                    data: ["supported": .array(WireProtocol.supportedVersions.map { .int(Int64($0)) })]
                )
            }
            protocolVersion = Int(version)
        } else {
            protocolVersion = nil
        }
    }

    /// The params as a client sends them; `init(params:)` reads them back.
    public var jsonValue: JSONValue {
        var members: JSONObject = [:]
        if let client { members["client"] = .string(client) }
        if let protocolVersion { members["protocol"] = .int(Int64(protocolVersion)) }
        return .object(members)
    }
}

/// The params of `stats`: none, `{}`.
public struct StatsParams: Sendable, Equatable {
    /// No params.
    public init() {}

    /// Checks that a `stats` call carries no params.
    ///
    /// - Parameter params: The request's `params`: absent or `{}`.
    /// - Throws: -32602 for any member, or positional params.
    public init(params: JSONValue?) throws(RPCError) {
        _ = try ParamsReader(params, method: Method.Stats.name, allowed: [])
    }

    /// The params as a client sends them, `{}`.
    public var jsonValue: JSONValue { .object([:]) }
}
