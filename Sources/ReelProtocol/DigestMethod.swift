import ReelJSON

// `digest` (an addition to protocol 1's first methods): a fingerprint of the state at a seq, so that two
// stores, a store and its backup, or a client's cache and the store can be compared without
// sending the state.

extension Method {
    public enum Digest: ProtocolMethod {
        public typealias Params = DigestParams
        public typealias Result = DigestResult
        public static let name: MethodName = "digest"
        public static let permission = Permission.read
    }
}

/// The params of `digest`: `{path?: "", at?: seq}`, those of `get`, read as strictly.
public struct DigestParams: MethodParams {
    /// The part of the state to fingerprint, and the seq (`nil` for the latest).
    public var state: GetParams

    public var path: JSONPointer { state.path }
    public var at: UInt64? { state.at }

    public init(path: JSONPointer = .root, at: UInt64? = nil) {
        state = GetParams(path: path, at: at)
    }

    /// - Throws: -32602 for a path that is not a JSON Pointer, an `at` that is not a seq, or an
    ///   unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        state = try GetParams(params: params, method: Method.Digest.name)
    }

    public var jsonValue: JSONValue { state.jsonValue }
}

/// The `digest` result: `{seq, sha256}`, the SHA-256 of the canonical JSON text of the value at
/// the path (what `get` sends as `value`), in lowercase hex. Anyone can compute it from a `get`.
public struct DigestResult: MethodResult, Equatable {
    public var seq: UInt64
    public var sha256: String

    public init(seq: UInt64, sha256: String) {
        self.seq = seq
        self.sha256 = sha256
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("seq", seq)
            members.add("sha256", sha256)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a digest result")
        self.init(seq: try members.seq("seq"), sha256: try members.string("sha256"))
    }
}
