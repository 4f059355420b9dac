import ReelCore
import ReelJSON

/// The `stats` result: `{seq, …}`, figures of the implementers' choosing (docs/REFERENCE.md). Reel's are typed
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
    /// The seq the history starts after, in a data directory made from a bundle (`nil`: from the
    /// first action).
    public var origin: UInt64?
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
    /// How long opening the store took (restoring its state), in seconds.
    public var openSeconds: Double?
    /// When the newest checkpoint written by this daemon was committed.
    public var lastCheckpointTime: Timestamp?
    /// Commit durations in microseconds: from a group's first reducer to its actions being
    /// durable and published.
    public var commitMicros: Distribution?
    /// Durations of the durable append (writing a group's records and syncing them), in
    /// microseconds.
    public var syncMicros: Distribution?
    /// Actions per commit.
    public var actionsPerCommit: Distribution?
    /// Durations of the LMDB commits that move acknowledged groups from the journal into the
    /// log (off the acknowledgement path), in microseconds.
    public var lmdbCommitMicros: Distribution?
    /// Bytes of acknowledged actions in the journal that LMDB does not have yet.
    public var journalBacklogBytes: Int64?
    /// Connections open.
    public var connections: Int?
    /// Subscriptions by mode (`value`, `patch`, `actions`).
    public var subscriptions: [String: Int]?
    /// By subscription mode, the most seqs one subscription's deliveries are behind the newest
    /// commit.
    public var subscriptionLag: [String: UInt64]?
    /// Dispatches refused since the daemon started, by error code (as text: `"1003"`).
    public var refusedByCode: [String: UInt64]?
    /// With `reeld --shared-log`: the node's standing in the shared log.
    public var sharedLog: SharedLogReport?
    /// While a daemon folds beside this one to take it over: how far it got (its last report).
    public var takeOver: TakeOverProgressReport?

    // The data directory's map, now.
    /// Bytes of the map in use (the file's pages up to the last one used).
    public var mapUsed: Int64?
    /// How far the change index goes (every action through this seq is in it; 0: none, or built
    /// by another reducer version) and the bytes of its pages; absent without one.
    public var changeIndexThrough: UInt64?
    public var changeIndexBytes: Int64?
    /// LMDB reader slots in use (an upper bound: slots are reused once freed).
    public var readerSlotsUsed: Int?
    /// The size of LMDB's reader table.
    public var maxReaders: Int?

    /// A distribution's count, percentiles and maximum.
    public struct Distribution: Sendable, Equatable {
        public var count: UInt64
        public var p50: UInt64
        public var p90: UInt64
        public var p99: UInt64
        public var p999: UInt64
        public var max: UInt64

        public init(count: UInt64, p50: UInt64, p90: UInt64, p99: UInt64, p999: UInt64, max: UInt64) {
            self.count = count
            self.p50 = p50
            self.p90 = p90
            self.p99 = p99
            self.p999 = p999
            self.max = max
        }

        static let names = ["count", "p50", "p90", "p99", "p999", "max"]
        var values: [UInt64] { [count, p50, p90, p99, p999, max] }

        var jsonValue: JSONValue {
            .object(JSONObject(uniqueKeysWithValues: zip(Self.names, values.map(JSONValue.init(seq:)))))
        }

        init?(_ json: JSONValue) {
            var values: [UInt64] = []
            for name in Self.names {
                guard let value = json[name]?.intValue.flatMap(UInt64.init(exactly:)) else { return nil }
                values.append(value)
            }
            self.init(count: values[0], p50: values[1], p90: values[2], p99: values[3], p999: values[4], max: values[5])
        }
    }

    /// Members this version does not know, as sent.
    public var other: JSONObject = [:]

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
        put("origin", origin.map(JSONValue.init(seq:)))
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
        put("openSeconds", openSeconds.map(JSONValue.double))
        put("lastCheckpointTime", lastCheckpointTime.map { .string($0.rfc3339) })
        put("commitMicros", commitMicros?.jsonValue)
        put("syncMicros", syncMicros?.jsonValue)
        put("actionsPerCommit", actionsPerCommit?.jsonValue)
        put("lmdbCommitMicros", lmdbCommitMicros?.jsonValue)
        put("journalBacklogBytes", journalBacklogBytes.map(JSONValue.int))
        put("connections", connections.map { .int(Int64($0)) })
        put("subscriptions", subscriptions.map { .object(JSONObject($0.mapValues { .int(Int64($0)) })) })
        put("subscriptionLag", subscriptionLag.map { .object(JSONObject($0.mapValues(JSONValue.init(seq:)))) })
        put("refusedByCode", refusedByCode.map { .object(JSONObject($0.mapValues(JSONValue.init(seq:)))) })
        put("mapUsed", mapUsed.map(JSONValue.int))
        put("changeIndexThrough", changeIndexThrough.map(JSONValue.init(seq:)))
        put("changeIndexBytes", changeIndexBytes.map(JSONValue.int))
        put("readerSlotsUsed", readerSlotsUsed.map { .int(Int64($0)) })
        put("maxReaders", maxReaders.map { .int(Int64($0)) })
        put("sharedLog", sharedLog?.jsonValue)
        put("takeOver", takeOver?.jsonValue)
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
        origin = try take("origin", count)
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
        openSeconds = try take("openSeconds") { $0.doubleValue }
        lastCheckpointTime = try take("lastCheckpointTime") { $0.stringValue.flatMap(Timestamp.init(rfc3339:)) }
        commitMicros = try take("commitMicros", Distribution.init)
        syncMicros = try take("syncMicros", Distribution.init)
        actionsPerCommit = try take("actionsPerCommit", Distribution.init)
        lmdbCommitMicros = try take("lmdbCommitMicros", Distribution.init)
        journalBacklogBytes = try take("journalBacklogBytes") { $0.intValue }
        connections = try take("connections", int)
        if let report = rest.removeValue(forKey: "sharedLog"), !report.isNull {
            sharedLog = try SharedLogReport(json: report)
        }
        if let report = rest.removeValue(forKey: "takeOver"), !report.isNull {
            do {
                takeOver = try TakeOverProgressReport(params: report)
            } catch {
                throw .invalidRequest("a stats result's takeOver is malformed: \(error.message)")
            }
        }
        func counts<T>(_ read: @escaping (JSONValue) -> T?) -> (JSONValue) -> [String: T]? {
            { value in
                guard case .object(let members) = value else { return nil }
                var typed: [String: T] = [:]
                for (name, member) in members {
                    guard let count = read(member) else { return nil }
                    typed[name] = count
                }
                return typed
            }
        }
        subscriptions = try take("subscriptions", counts(int))
        subscriptionLag = try take("subscriptionLag", counts(count))
        refusedByCode = try take("refusedByCode", counts(count))
        mapUsed = try take("mapUsed") { $0.intValue }
        changeIndexThrough = try take("changeIndexThrough", count)
        changeIndexBytes = try take("changeIndexBytes") { $0.intValue }
        readerSlotsUsed = try take("readerSlotsUsed", int)
        maxReaders = try take("maxReaders", int)
        other = rest
    }
}
