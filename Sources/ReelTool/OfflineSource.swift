import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore

/// A data directory opened read-only, inspected in this process with the app's own reducers.
///
/// Read-only LMDB never writes the data file, so this is safe while a daemon appends to the same
/// directory: each call runs on its own read transactions and sees the latest commit at its
/// start. Nothing here changes the log.
struct OfflineSource<State: StoreState>: StoreSource {
    let timeline: Timeline<State>
    let label: String
    var historyPageSize: Int { HistoryParams.maxLimit }

    init(path: String, definition: StoreDefinition<State>) throws(ToolError) {
        let directory: DataDirectory
        do {
            directory = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        } catch {
            throw ToolError(error)
        }
        guard directory.metadata.reducerName == definition.identity.name else {
            throw ToolError(
                "\(path) was made for reducer '\(directory.metadata.reducerName)', and this program folds with '\(definition.identity.name)': inspect it with that reducer's program",
                exitStatus: ExitStatus.refused
            )
        }
        timeline = Timeline(directory: directory, definition: definition)
        label = "the data directory \(path) (read-only)"
    }

    private func run<T>(_ body: () throws(StoreError) -> T) throws(ToolError) -> T {
        do {
            return try body()
        } catch {
            throw ToolError(error)
        }
    }

    func reducer() async throws(ToolError) -> ReducerIdentity { timeline.definition.identity }

    func latestSeq() async throws(ToolError) -> UInt64 {
        try run { () throws(StoreError) in try timeline.latestSeq() }
    }

    func value(at seq: UInt64?, path: JSONPointer) async throws(ToolError) -> (seq: UInt64, value: JSONValue) {
        try run { () throws(StoreError) in
            let at: UInt64
            if let seq { at = seq } else { at = try timeline.latestSeq() }
            return (at, try timeline.value(at: at, path: path))
        }
    }

    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) async throws(ToolError) -> (actions: [ActionEnvelope], next: UInt64?) {
        try run { () throws(StoreError) in
            let page = try timeline.history(from: from, to: to, limit: limit, types: types)
            return (page.actions, page.next)
        }
    }

    func diff(from: UInt64, to: UInt64, path: JSONPointer) async throws(ToolError) -> JSONPatch {
        try run { () throws(StoreError) in try timeline.diff(from: from, to: to, path: path) }
    }

    func replay(to: UInt64?, skip: Set<UInt64>, path: JSONPointer) async throws(ToolError) -> (value: JSONValue, refused: [SeqReason]) {
        try run { () throws(StoreError) in
            let last: UInt64
            if let to { last = to } else { last = try timeline.latestSeq() }
            let whatIf = try timeline.replay(to: last, skipping: skip, path: path)
            return (whatIf.value, whatIf.refused.map { SeqReason(seq: $0.seq, reason: $0.reason) })
        }
    }

    func checkpoints() async throws(ToolError) -> [CheckpointInfo] {
        do {
            return try timeline.directory.checkpointHeaders().map {
                CheckpointInfo(seq: $0.seq, reducer: $0.reducer, time: $0.time, hash: $0.hashHex)
            }
        } catch {
            throw ToolError(error)
        }
    }

    func verify(from: UInt64, through: UInt64) async throws(ToolError) -> VerifyOutcome {
        try run { () throws(StoreError) in
            let report = try timeline.verify(from: from, through: through)
            return VerifyOutcome(
                from: from, through: through, matched: report.matched,
                skipped: report.skipped.map { SeqReason(seq: $0.seq, reason: $0.reason) },
                refused: report.refused.map { SeqReason(seq: $0.seq, reason: $0.reason) },
                mismatch: report.mismatch.map {
                    .init(seq: $0.seq, reason: $0.reason, patch: $0.patch, checkpointHash: $0.checkpointHash, replayedHash: $0.replayedHash)
                }
            )
        }
    }

    func scan() async throws(ToolError) -> ScanOutcome {
        do {
            let report = try timeline.directory.scanIntegrity()
            return ScanOutcome(
                actions: report.actions, checkpoints: report.checkpoints, idempotencyKeys: report.idempotencyKeys,
                damaged: report.damage.map { .init(what: $0.kind.rawValue, seq: $0.seq, key: $0.key, reason: $0.reason) }
            )
        } catch {
            throw ToolError(error)
        }
    }

    func bisect(
        _ condition: JSONCondition, through: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(ToolError) -> BisectAnswer {
        try run { () throws(StoreError) in
            let result = try timeline.bisect(through: through, progress: progress) { condition.holds(in: $0) }
            return BisectAnswer(seq: result.seq, latest: result.through, probes: result.probes)
        }
    }

    /// Offline there is no daemon to count anything: the figures of the data directory itself.
    func stats() async throws(ToolError) -> JSONValue {
        let headers = try await checkpoints()
        let directory = timeline.directory
        let own = headers.filter { $0.reducer == timeline.definition.identity }
        var figures: [String: JSONValue] = [
            "seq": JSONValue(seq: try await latestSeq()),
            "checkpoints": .int(Int64(headers.count)),
            "mapSize": .int(Int64(directory.mapSize)),
            "formatVersion": .string(directory.metadata.formatVersion),
            "created": .string(directory.metadata.created.rfc3339),
            "reducer": .string(timeline.definition.identity.description),
        ]
        if let last = own.last { figures["lastCheckpointSeq"] = JSONValue(seq: last.seq) }
        return .object(figures)
    }

    func backup(to path: String) async throws(ToolError) -> BackupOutcome {
        do {
            let report = try timeline.directory.backup(to: path)
            return BackupOutcome(path: report.path, seq: report.seq, bytes: report.bytes)
        } catch {
            throw ToolError(error.message, exitStatus: ExitStatus.refused)
        }
    }

    func dispatch(_ actions: [Action], expectedSeq: UInt64?, idempotencyKey: String?) async throws(ToolError) -> (seqs: ClosedRange<UInt64>, duplicate: Bool) {
        throw ToolError(
            "dispatching needs a running daemon: \(label) is only read. Drop --data-dir to use the daemon's socket",
            exitStatus: ExitStatus.usage
        )
    }

    /// The environment closes when the last reference to the directory goes.
    func close() async {}

    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode) async throws(ToolError) -> WatchFeed {
        try await DirectoryWatch(source: self, path: path, mode: mode).start(since: since)
    }
}
