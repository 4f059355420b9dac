import ReelJSON

/// The params of `checkpoints` (an addition to protocol 1's first methods): `{}`.
public struct CheckpointsParams: Sendable, Equatable {
    public init() {}

    /// Reads the params of a `checkpoints` call.
    ///
    /// - Throws: -32602 for any member.
    public init(params: JSONValue?) throws(RPCError) {
        _ = try ParamsReader(params, method: Method.Checkpoints.name, allowed: [])
    }

    /// The params as a client sends them.
    public var jsonValue: JSONValue { .object([:]) }
}

/// The params of `scan` (an addition): none. The daemon reads every record of its data directory
/// on a read transaction of its own, checks each one's checksum, and reports every damaged one.
public struct ScanParams: Sendable, Equatable {
    public init() {}

    /// Reads the params of a `scan` call.
    ///
    /// - Throws: -32602 for any member.
    public init(params: JSONValue?) throws(RPCError) {
        _ = try ParamsReader(params, method: Method.Scan.name, allowed: [])
    }

    /// The params as a client sends them.
    public var jsonValue: JSONValue { .object([:]) }
}

/// The params of `verify` (an addition): `{from?: 0, through?: latest}`.
///
/// The daemon replays `from + 1 ... through` and compares the result with every checkpoint in
/// that range. `from` is 0 (replay from the initial state) or the seq of a checkpoint verified by
/// an earlier call: a client verifies a long log in segments, one checkpoint interval per call,
/// so that no single request runs long and the client can show progress.
public struct VerifyParams: Sendable, Equatable {
    public var from: UInt64
    public var through: UInt64?

    public init(from: UInt64 = 0, through: UInt64? = nil) {
        self.from = from
        self.through = through
    }

    /// Reads the params of a `verify` call.
    ///
    /// - Throws: -32602 for a `from` or `through` that is not a seq, `from` after `through`, or an
    ///   unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Verify.name, allowed: ["from", "through"])
        from = try reader.seq("from") ?? 0
        through = try reader.seq("through")
        if let through, from > through {
            throw .invalidParams("params.from (\(from)) must not be greater than params.through (\(through))")
        }
    }

    /// The params as a client sends them.
    public var jsonValue: JSONValue {
        var members: JSONObject = ["from": JSONValue(seq: from)]
        if let through { members["through"] = JSONValue(seq: through) }
        return .object(members)
    }
}

/// The params of `backup` (an addition): `{path}`, an absolute path on the daemon's machine.
///
/// The daemon writes the copy itself, as its own user, with owner-only permissions: the path is
/// read on the daemon's side of the socket, so it must be absolute (the daemon's working
/// directory means nothing to the client).
public struct BackupParams: Sendable, Equatable {
    public var path: String

    public init(path: String) {
        self.path = path
    }

    /// Reads the params of a `backup` call.
    ///
    /// - Throws: -32602 when `path` is missing, not a string, or not absolute.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Backup.name, allowed: ["path"])
        guard let path = try reader.string("path") else {
            throw .invalidParams("backup needs params.path, the absolute path of a new directory for the copy")
        }
        guard path.hasPrefix("/") else {
            throw .invalidParams("params.path must be an absolute path (the daemon resolves it, not the client), not \(JSONValue.string(path).jsonString)")
        }
        self.path = path
    }

    /// The params as a client sends them.
    public var jsonValue: JSONValue { ["path": .string(path)] }
}

/// The params of `bisect` (an addition): `{condition, through?: latest}`, the condition in the
/// language of `reel bisect` (``JSONCondition``), such as `"/character/hp <= 0"`.
public struct BisectParams: Sendable, Equatable {
    public var condition: JSONCondition
    public var through: UInt64?

    public init(condition: JSONCondition, through: UInt64? = nil) {
        self.condition = condition
        self.through = through
    }

    /// Reads the params of a `bisect` call.
    ///
    /// - Throws: -32602 when `condition` is missing or does not parse (the message names the
    ///   column), or `through` is not a seq.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Bisect.name, allowed: ["condition", "through"])
        condition = try reader.condition(method: Method.Bisect.name, example: "/character/hp <= 0")
        through = try reader.seq("through")
    }

    /// The params as a client sends them.
    public var jsonValue: JSONValue {
        var members: JSONObject = ["condition": .string(condition.description)]
        if let through { members["through"] = JSONValue(seq: through) }
        return .object(members)
    }
}
