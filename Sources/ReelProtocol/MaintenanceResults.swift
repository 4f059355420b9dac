import ReelCore
import ReelJSON

// Results of the maintenance methods added to protocol 1 (`checkpoints`, `verify`, `backup`, `scan`),
// as types both sides use: the server writes them with `jsonValue`, clients read them back with
// `init(json:)`, so the two cannot drift apart.

/// One checkpoint, as `checkpoints` lists it: `{seq, reducer: {name, version}, time, hash}`.
public struct CheckpointInfo: Sendable, Equatable {
    public var seq: UInt64
    public var reducer: ReducerIdentity
    public var time: Timestamp
    /// SHA-256 of the checkpoint's canonical state encoding, as lowercase hex.
    public var hash: String

    public init(seq: UInt64, reducer: ReducerIdentity, time: Timestamp, hash: String) {
        self.seq = seq
        self.reducer = reducer
        self.time = time
        self.hash = hash
    }

    public var jsonValue: JSONValue {
        [
            "seq": JSONValue(seq: seq),
            "reducer": ["name": .string(reducer.name), "version": .string(reducer.version)],
            "time": .string(time.rfc3339),
            "hash": .string(hash),
        ]
    }

    /// - Throws: -32600 when a member is missing or malformed.
    public init(json: JSONValue) throws(RPCError) {
        guard let seq = json["seq"]?.intValue, seq >= 0,
            case .string(let name)? = json["reducer"]?["name"], case .string(let version)? = json["reducer"]?["version"],
            case .string(let time)? = json["time"], let timestamp = Timestamp(rfc3339: time),
            case .string(let hash)? = json["hash"]
        else {
            throw .invalidRequest("a checkpoint needs seq, reducer {name, version}, time and hash, not \(json.jsonString)")
        }
        self.init(seq: UInt64(seq), reducer: ReducerIdentity(name: name, version: version), time: timestamp, hash: hash)
    }
}

/// A seq and a sentence about it: a refused action, a skipped checkpoint.
public struct SeqReason: Sendable, Equatable {
    public var seq: UInt64
    public var reason: String

    public init(seq: UInt64, reason: String) {
        self.seq = seq
        self.reason = reason
    }

    public var jsonValue: JSONValue { ["seq": JSONValue(seq: seq), "reason": .string(reason)] }

    init(json: JSONValue) throws(RPCError) {
        guard let seq = json["seq"]?.intValue, seq >= 0, case .string(let reason)? = json["reason"] else {
            throw .invalidRequest("expected {seq, reason}, not \(json.jsonString)")
        }
        self.init(seq: UInt64(seq), reason: reason)
    }

    static func list(_ json: JSONValue?) throws(RPCError) -> [SeqReason] {
        guard let json else { return [] }
        guard case .array(let elements) = json else { throw .invalidRequest("expected an array of {seq, reason}") }
        var list: [SeqReason] = []
        for element in elements { list.append(try SeqReason(json: element)) }
        return list
    }
}

/// The `verify` result: `{from, through, matched: [seq], skipped: [{seq, reason}],
/// refused: [{seq, reason}], mismatch?: {seq, reason, patch, checkpointHash, replayedHash}}`.
public struct VerifyOutcome: Sendable, Equatable {
    /// A checkpoint whose state is not what the replay gives; `patch` turns the checkpoint's state
    /// into the replayed one.
    public struct Mismatch: Sendable, Equatable {
        public var seq: UInt64
        public var reason: String
        public var patch: JSONPatch
        public var checkpointHash: String
        public var replayedHash: String

        public init(seq: UInt64, reason: String, patch: JSONPatch, checkpointHash: String, replayedHash: String) {
            self.seq = seq
            self.reason = reason
            self.patch = patch
            self.checkpointHash = checkpointHash
            self.replayedHash = replayedHash
        }
    }

    public var from: UInt64
    public var through: UInt64
    public var matched: [UInt64]
    public var skipped: [SeqReason]
    public var refused: [SeqReason]
    public var mismatch: Mismatch?

    public init(from: UInt64, through: UInt64, matched: [UInt64], skipped: [SeqReason], refused: [SeqReason], mismatch: Mismatch?) {
        self.from = from
        self.through = through
        self.matched = matched
        self.skipped = skipped
        self.refused = refused
        self.mismatch = mismatch
    }

    public var jsonValue: JSONValue {
        var members: [String: JSONValue] = [
            "from": JSONValue(seq: from), "through": JSONValue(seq: through),
            "matched": .array(matched.map { JSONValue(seq: $0) }),
            "skipped": .array(skipped.map(\.jsonValue)), "refused": .array(refused.map(\.jsonValue)),
        ]
        if let mismatch {
            members["mismatch"] = [
                "seq": JSONValue(seq: mismatch.seq), "reason": .string(mismatch.reason), "patch": mismatch.patch.jsonValue,
                "checkpointHash": .string(mismatch.checkpointHash), "replayedHash": .string(mismatch.replayedHash),
            ]
        }
        return .object(members)
    }

    /// - Throws: -32600 when a member is missing or malformed.
    public init(json: JSONValue) throws(RPCError) {
        guard let from = json["from"]?.intValue, let through = json["through"]?.intValue, from >= 0, through >= 0,
            case .array(let matched)? = json["matched"]
        else {
            throw .invalidRequest("a verify result needs from, through and matched")
        }
        self.from = UInt64(from)
        self.through = UInt64(through)
        self.matched = matched.compactMap { $0.intValue.map { UInt64(clamping: $0) } }
        skipped = try SeqReason.list(json["skipped"])
        refused = try SeqReason.list(json["refused"])
        if let raw = json["mismatch"], !raw.isNull {
            guard let seq = raw["seq"]?.intValue, seq >= 0, case .string(let reason)? = raw["reason"],
                let patchJSON = raw["patch"], let patch = try? JSONPatch(patchJSON)
            else {
                throw .invalidRequest("a verify mismatch needs seq, reason and patch")
            }
            mismatch = Mismatch(
                seq: UInt64(seq), reason: reason, patch: patch,
                checkpointHash: raw["checkpointHash"]?.stringValue ?? "", replayedHash: raw["replayedHash"]?.stringValue ?? ""
            )
        } else {
            mismatch = nil
        }
    }
}

/// The `backup` result: `{path, seq, bytes}`.
public struct BackupOutcome: Sendable, Equatable {
    public var path: String
    public var seq: UInt64
    public var bytes: Int64

    public init(path: String, seq: UInt64, bytes: Int64) {
        self.path = path
        self.seq = seq
        self.bytes = bytes
    }

    public var jsonValue: JSONValue { ["path": .string(path), "seq": JSONValue(seq: seq), "bytes": .int(bytes)] }

    /// - Throws: -32600 when a member is missing or malformed.
    public init(json: JSONValue) throws(RPCError) {
        guard case .string(let path)? = json["path"], let seq = json["seq"]?.intValue, seq >= 0, let bytes = json["bytes"]?.intValue else {
            throw .invalidRequest("a backup result needs path, seq and bytes")
        }
        self.init(path: path, seq: UInt64(seq), bytes: bytes)
    }
}

/// The `bisect` result: `{seq, through, probes}`, `seq` being `null` when the condition does not
/// hold at `through`.
public struct BisectOutcome: Sendable, Equatable {
    public var seq: UInt64?
    public var through: UInt64
    public var probes: Int

    public init(seq: UInt64?, through: UInt64, probes: Int) {
        self.seq = seq
        self.through = through
        self.probes = probes
    }

    public var jsonValue: JSONValue {
        ["seq": seq.map { JSONValue(seq: $0) } ?? .null, "through": JSONValue(seq: through), "probes": .int(Int64(probes))]
    }

    /// - Throws: -32600 when a member is missing or malformed.
    public init(json: JSONValue) throws(RPCError) {
        guard let through = json["through"]?.intValue, through >= 0, let probes = json["probes"]?.intValue,
            let seqValue = json["seq"]
        else {
            throw .invalidRequest("a bisect result needs seq, through and probes")
        }
        var seq: UInt64?
        if let found = seqValue.intValue, found >= 0 { seq = UInt64(found) }
        self.init(seq: seq, through: UInt64(through), probes: Int(probes))
    }
}

/// The `scan` result: `{actions, checkpoints, idempotencyKeys, damaged: [{what, seq?, key?, reason}]}`,
/// where `what` is `action`, `log`, `checkpoint` or `idempotencyKey`.
public struct ScanOutcome: Sendable, Equatable {
    /// One damaged record, or damage to the log as a whole.
    public struct Damage: Sendable, Equatable {
        /// `action`, `log`, `checkpoint` or `idempotencyKey`.
        public var what: String
        public var seq: UInt64?
        public var key: String?
        public var reason: String

        public init(what: String, seq: UInt64?, key: String?, reason: String) {
            self.what = what
            self.seq = seq
            self.key = key
            self.reason = reason
        }

        public var jsonValue: JSONValue {
            var members: [String: JSONValue] = ["what": .string(what), "reason": .string(reason)]
            if let seq { members["seq"] = JSONValue(seq: seq) }
            if let key { members["key"] = .string(key) }
            return .object(members)
        }

        /// Whether the log is damaged (an action or the log as a whole), not just a checkpoint or key.
        public var isLogDamage: Bool { what == "action" || what == "log" }
    }

    public var actions: UInt64
    public var checkpoints: Int
    public var idempotencyKeys: Int
    public var damaged: [Damage]

    public init(actions: UInt64, checkpoints: Int, idempotencyKeys: Int, damaged: [Damage]) {
        self.actions = actions
        self.checkpoints = checkpoints
        self.idempotencyKeys = idempotencyKeys
        self.damaged = damaged
    }

    public var jsonValue: JSONValue {
        [
            "actions": JSONValue(seq: actions), "checkpoints": .int(Int64(checkpoints)),
            "idempotencyKeys": .int(Int64(idempotencyKeys)), "damaged": .array(damaged.map(\.jsonValue)),
        ]
    }

    /// - Throws: -32600 when a member is missing or malformed.
    public init(json: JSONValue) throws(RPCError) {
        guard let actions = json["actions"]?.intValue, let checkpoints = json["checkpoints"]?.intValue,
            let keys = json["idempotencyKeys"]?.intValue, case .array(let damaged)? = json["damaged"]
        else {
            throw .invalidRequest("a scan result needs actions, checkpoints, idempotencyKeys and damaged")
        }
        var list: [Damage] = []
        for element in damaged {
            guard case .string(let what)? = element["what"], case .string(let reason)? = element["reason"] else {
                throw .invalidRequest("expected {what, seq?, key?, reason}, not \(element.jsonString)")
            }
            var key: String?
            if case .string(let name)? = element["key"] { key = name }
            list.append(Damage(what: what, seq: element["seq"]?.intValue.map { UInt64(clamping: $0) }, key: key, reason: reason))
        }
        self.init(actions: UInt64(clamping: actions), checkpoints: Int(clamping: checkpoints), idempotencyKeys: Int(clamping: keys), damaged: list)
    }
}
