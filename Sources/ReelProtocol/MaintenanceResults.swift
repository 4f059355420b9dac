import ReelCore
import ReelJSON

// Results of the maintenance methods added to protocol 1 (`checkpoints`, `verify`, `backup`,
// `bisect`, `scan`), as types both sides use (see `MethodResult`).

/// One checkpoint, as `checkpoints` lists it: `{seq, reducer: {name, version}, time, hash}`.
public struct CheckpointInfo: MethodResult, Equatable {
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

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("hash", hash)
            members.add("reducer", writing: reducer.writeJSON)
            members.add("seq", seq)
            members.add("time", time.rfc3339)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a checkpoint")
        guard let time = Timestamp(rfc3339: try members.string("time")) else {
            throw .invalidRequest("a checkpoint's time must be an RFC 3339 UTC timestamp")
        }
        self.init(
            seq: try members.seq("seq"), reducer: try ReducerIdentity(wire: try members.value("reducer"), "a checkpoint's reducer"),
            time: time, hash: try members.string("hash")
        )
    }
}

/// The `checkpoints` result: `{checkpoints: [checkpoint], reducer: {name, version}}`, oldest
/// first, with the reducer the store folds with (checkpoints of other reducers are listed too, and
/// passed over when states are rebuilt).
public struct CheckpointList: MethodResult, Equatable {
    public var checkpoints: [CheckpointInfo]
    public var reducer: ReducerIdentity

    public init(checkpoints: [CheckpointInfo], reducer: ReducerIdentity) {
        self.checkpoints = checkpoints
        self.reducer = reducer
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("checkpoints", checkpoints)
            members.add("reducer", writing: reducer.writeJSON)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a checkpoints result")
        var list: [CheckpointInfo] = []
        for element in try members.array("checkpoints") { list.append(try CheckpointInfo(result: element)) }
        self.init(checkpoints: list, reducer: try ReducerIdentity(wire: try members.value("reducer"), "a checkpoints result's reducer"))
    }
}

/// A seq and a sentence about it: a refused action, a skipped checkpoint.
public struct SeqReason: Sendable, Equatable, JSONWritable {
    public var seq: UInt64
    public var reason: String

    public init(seq: UInt64, reason: String) {
        self.seq = seq
        self.reason = reason
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("reason", reason)
            members.add("seq", seq)
        }
    }

    init(json: JSONValue) throws(RPCError) {
        let members = try ResultReader(json, "a {seq, reason}")
        self.init(seq: try members.seq("seq"), reason: try members.string("reason"))
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
public struct VerifyOutcome: MethodResult, Equatable {
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

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("from", from)
            members.add("matched", matched)
            if let mismatch {
                members.add("mismatch") { bytes in
                    bytes.appendJSONObject { members in
                        members.add("checkpointHash", mismatch.checkpointHash)
                        members.add("patch", mismatch.patch)
                        members.add("reason", mismatch.reason)
                        members.add("replayedHash", mismatch.replayedHash)
                        members.add("seq", mismatch.seq)
                    }
                }
            }
            members.add("refused", refused)
            members.add("skipped", skipped)
            members.add("through", through)
        }
    }

    public init(result json: JSONValue) throws(RPCError) {
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
public struct BackupOutcome: MethodResult, Equatable {
    public var path: String
    public var seq: UInt64
    public var bytes: Int64

    public init(path: String, seq: UInt64, bytes: Int64) {
        self.path = path
        self.seq = seq
        self.bytes = bytes
    }

    public func writeJSON(into output: inout [UInt8]) {
        output.appendJSONObject { members in
            members.add("bytes", bytes)
            members.add("path", path)
            members.add("seq", seq)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a backup result")
        self.init(path: try members.string("path"), seq: try members.seq("seq"), bytes: try members.int("bytes"))
    }
}

/// The `bisect` result: `{seq, through, probes}`, `seq` being `null` when the condition does not
/// hold at `through`.
public struct BisectOutcome: MethodResult, Equatable {
    public var seq: UInt64?
    public var through: UInt64
    public var probes: Int

    public init(seq: UInt64?, through: UInt64, probes: Int) {
        self.seq = seq
        self.through = through
        self.probes = probes
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("probes", probes)
            members.add("seq", seq.map { JSONValue(seq: $0) } ?? .null)
            members.add("through", through)
        }
    }

    public init(result: JSONValue) throws(RPCError) {
        let members = try ResultReader(result, "a bisect result")
        _ = try members.value("seq")  // present, as a seq or null
        self.init(seq: try members.optionalSeq("seq"), through: try members.seq("through"), probes: Int(clamping: try members.int("probes")))
    }
}

/// The `scan` result: `{actions, checkpoints, idempotencyKeys, damaged: [{what, seq?, key?, reason}]}`,
/// where `what` is `action`, `log`, `checkpoint` or `idempotencyKey`.
public struct ScanOutcome: MethodResult, Equatable {
    /// One damaged record, or damage to the log as a whole.
    public struct Damage: Sendable, Equatable, JSONWritable {
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

        public func writeJSON(into bytes: inout [UInt8]) {
            bytes.appendJSONObject { members in
                members.add("key", ifPresent: key)
                members.add("reason", reason)
                members.add("seq", ifPresent: seq)
                members.add("what", what)
            }
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

    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            members.add("actions", actions)
            members.add("checkpoints", checkpoints)
            members.add("damaged", damaged)
            members.add("idempotencyKeys", idempotencyKeys)
        }
    }

    public init(result json: JSONValue) throws(RPCError) {
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
