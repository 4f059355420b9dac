import ReelCore
import ReelJSON
import ReelProtocol
import ReelQuery
import ReelStorage
import ReelStore

/// A data directory opened read-only, inspected in this process with the app's own reducers.
/// Every read is answered by ``TimelineQueries``, as the daemon answers it.
///
/// Read-only LMDB never writes the data file, so this is safe while a daemon appends to the same
/// directory: each call runs on its own read transactions and sees the latest commit at its
/// start. Nothing here changes the log.
struct OfflineSource<State: StoreState>: StoreSource {
    let queries: TimelineQueries<State>
    let label: String
    var timeline: Timeline<State> { queries.timeline }
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
        queries = TimelineQueries(Timeline(directory: directory, definition: definition))
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
        try run { () throws(StoreError) in try queries.latestSeq() }
    }

    func value(at seq: UInt64?, path: JSONPointer) async throws(ToolError) -> (seq: UInt64, value: JSONValue) {
        let snapshot = try run { () throws(StoreError) in try queries.get(GetParams(path: path, at: seq)) }
        return (snapshot.seq, snapshot.value)
    }

    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) async throws(ToolError) -> (actions: [ActionEnvelope], next: UInt64?) {
        let page = try run { () throws(StoreError) in
            try queries.history(HistoryParams(from: from, to: to, limit: limit, types: types))
        }
        return (page.actions, page.next)
    }

    func diff(from: UInt64, to: UInt64, path: JSONPointer) async throws(ToolError) -> JSONPatch {
        try run { () throws(StoreError) in try queries.diff(DiffParams(from: from, to: to, path: path)).patch }
    }

    func replay(to: UInt64?, skip: Set<UInt64>, path: JSONPointer) async throws(ToolError) -> (value: JSONValue, refused: [SeqReason]) {
        let whatIf = try run { () throws(StoreError) in try queries.replay(ReplayParams(to: to, skip: skip, path: path)) }
        return (whatIf.value, whatIf.refused)
    }

    func checkpoints() async throws(ToolError) -> [CheckpointInfo] {
        try run { () throws(StoreError) in try queries.checkpoints().checkpoints }
    }

    func verify(from: UInt64, through: UInt64) async throws(ToolError) -> VerifyOutcome {
        try run { () throws(StoreError) in try queries.verify(VerifyParams(from: from, through: through)) }
    }

    func scan() async throws(ToolError) -> ScanOutcome {
        try run { () throws(StoreError) in try queries.scan() }
    }

    func bisect(
        _ condition: JSONCondition, through: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(ToolError) -> BisectAnswer {
        let outcome = try run { () throws(StoreError) in
            try queries.bisect(BisectParams(condition: condition, through: through), progress: progress)
        }
        return BisectAnswer(seq: outcome.seq, latest: outcome.through, probes: outcome.probes)
    }

    /// Offline there is no daemon to count anything: the figures of the data directory itself.
    func stats() async throws(ToolError) -> StatsResult {
        try run { () throws(StoreError) in try queries.stats() }
    }

    func backup(to path: String) async throws(ToolError) -> BackupOutcome {
        do {
            return try queries.backup(BackupParams(path: path))
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
