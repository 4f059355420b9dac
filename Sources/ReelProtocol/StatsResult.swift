import ReelCore
import ReelJSON

/// The `stats` result: `{seq, …}`, figures of the implementers' choosing (SPEC). Reel's are typed
/// here; members this version does not know are kept in ``other``.
///
/// Figures of the data directory come from a daemon and from `reel stats --data-dir` alike;
/// counters since the daemon started only from a daemon (`nil` offline).
public struct StatsResult: MethodResult, Equatable {
    /// The latest committed seq.
    public var seq: UInt64

    // The data directory.
    /// The reducer the store folds with, as `name@version`.
    public var reducer: String?
    /// The storage format of the data directory.
    public var formatVersion: String?
    /// When the data directory was created.
    public var created: Timestamp?
    /// The LMDB map size in bytes.
    public var mapSize: Int64?
    /// Checkpoints kept beside the log (of any reducer).
    public var checkpoints: Int?
    /// The seq of the latest checkpoint of this reducer.
    public var lastCheckpointSeq: UInt64?

    // The daemon, since it started.
    /// Commits made (each may hold many actions).
    public var commits: UInt64?
    /// Actions committed.
    public var actionsCommitted: UInt64?
    /// The most actions one commit held.
    public var largestCommit: Int?
    /// Dispatches refused (by a reducer, a seq check or storage).
    public var dispatchesRefused: UInt64?
    /// Dispatches answered from their idempotency key.
    public var duplicates: UInt64?
    /// Commits that failed in storage.
    public var commitFailures: UInt64?
    /// Checkpoints written.
    public var checkpointsWritten: UInt64?
    /// Actions replayed to open the store.
    public var replayedAtOpen: Int?
    /// The checkpoint the store opened from, when it opened from one.
    public var restoredFromCheckpoint: UInt64?

    /// Members this version does not know, as sent.
    public var other: [String: JSONValue] = [:]

    public init(seq: UInt64) {
        self.seq = seq
    }

    /// A figure by its name on the wire (`"seq"`, `"commits"`, …), known or not.
    public subscript(name: String) -> JSONValue? {
        jsonValue[name]
    }

    /// Every figure as one JSON object. (Stats are asked for rarely; the tree costs nothing here.)
    public var jsonValue: JSONValue {
        var members = other
        func put(_ name: String, _ value: JSONValue?) { if let value { members[name] = value } }
        put("seq", JSONValue(seq: seq))
        put("reducer", reducer.map(JSONValue.string))
        put("formatVersion", formatVersion.map(JSONValue.string))
        put("created", created.map { .string($0.rfc3339) })
        put("mapSize", mapSize.map(JSONValue.int))
        put("checkpoints", checkpoints.map { .int(Int64($0)) })
        put("lastCheckpointSeq", lastCheckpointSeq.map(JSONValue.init(seq:)))
        put("commits", commits.map(JSONValue.init(seq:)))
        put("actionsCommitted", actionsCommitted.map(JSONValue.init(seq:)))
        put("largestCommit", largestCommit.map { .int(Int64($0)) })
        put("dispatchesRefused", dispatchesRefused.map(JSONValue.init(seq:)))
        put("duplicates", duplicates.map(JSONValue.init(seq:)))
        put("commitFailures", commitFailures.map(JSONValue.init(seq:)))
        put("checkpointsWritten", checkpointsWritten.map(JSONValue.init(seq:)))
        put("replayedAtOpen", replayedAtOpen.map { .int(Int64($0)) })
        put("restoredFromCheckpoint", restoredFromCheckpoint.map(JSONValue.init(seq:)))
        return .object(members)
    }

    public func writeJSON(into bytes: inout [UInt8]) {
        jsonValue.serialize(into: &bytes)
    }

    public init(result: JSONValue) throws(RPCError) {
        let reader = try ResultReader(result, "a stats result")
        self.init(seq: try reader.seq("seq"))
        var rest = reader.members
        rest["seq"] = nil
        func take<T>(_ name: String, _ read: (JSONValue) -> T?) throws(RPCError) -> T? {
            guard let value = rest.removeValue(forKey: name), !value.isNull else { return nil }
            guard let typed = read(value) else {
                throw .invalidRequest("a stats result's \(name) is malformed: \(value.described)")
            }
            return typed
        }
        func count(_ value: JSONValue) -> UInt64? { value.intValue.flatMap(UInt64.init(exactly:)) }
        func int(_ value: JSONValue) -> Int? { value.intValue.flatMap(Int.init(exactly:)) }
        reducer = try take("reducer") { $0.stringValue }
        formatVersion = try take("formatVersion") { $0.stringValue }
        created = try take("created") { $0.stringValue.flatMap(Timestamp.init(rfc3339:)) }
        mapSize = try take("mapSize") { $0.intValue }
        checkpoints = try take("checkpoints", int)
        lastCheckpointSeq = try take("lastCheckpointSeq", count)
        commits = try take("commits", count)
        actionsCommitted = try take("actionsCommitted", count)
        largestCommit = try take("largestCommit", int)
        dispatchesRefused = try take("dispatchesRefused", count)
        duplicates = try take("duplicates", count)
        commitFailures = try take("commitFailures", count)
        checkpointsWritten = try take("checkpointsWritten", count)
        replayedAtOpen = try take("replayedAtOpen", int)
        restoredFromCheckpoint = try take("restoredFromCheckpoint", count)
        other = rest
    }
}
