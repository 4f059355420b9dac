import Crypto
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore

/// Answers every read method of the protocol from a ``Timeline``: `get`, `history`, `diff`,
/// `replay`, `bisect`, `verify`, `checkpoints`, `scan`, `backup`, `digest`, `describe` and the data
/// directory's `stats` (each method's ``TimelineQuery`` conformance says which).
///
/// The one place each answer is computed: the daemon's handler calls it on its query pool, and
/// `reel --data-dir` calls it in its own process, so the two cannot answer differently. Each call
/// runs on its own read transactions and sees the latest commit at its start; nothing here writes
/// the log.
public struct TimelineQueries<State: StoreState>: Sendable {
    /// The latest state and its seq, where a running store has it in memory.
    public typealias LatestState = @Sendable () -> (seq: UInt64, state: State)

    public let timeline: Timeline<State>
    /// A daemon's published state: reads of the latest seq take it instead of rebuilding it.
    let latest: LatestState?
    /// Told of long queries' progress: `bisect`'s (probes so far, an estimate of the total),
    /// `find`'s (the seq reached, the last seq).
    let progress: @Sendable (Int, Int) -> Void

    /// - Parameters:
    ///   - timeline: The store's log and checkpoints.
    ///   - latest: The latest state in memory, when a running store has it.
    ///   - progress: Told of long queries' progress (`bisect`'s probes).
    public init(_ timeline: Timeline<State>, latest: LatestState? = nil, progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }) {
        self.timeline = timeline
        self.latest = latest
        self.progress = progress
    }

    /// The same queries, telling `progress` of their progress.
    public func reporting(_ progress: @escaping @Sendable (Int, Int) -> Void) -> TimelineQueries {
        TimelineQueries(timeline, latest: latest, progress: progress)
    }

    /// The latest committed seq.
    public func latestSeq() throws(StoreError) -> UInt64 {
        try timeline.latestSeq()
    }

    /// A requested seq, or the latest when none was.
    func seq(_ requested: UInt64?) throws(StoreError) -> UInt64 {
        if let requested { return requested }
        return try latestSeq()
    }

    /// `get`: the value at the path at `at`, or at the latest seq.
    public func get(_ params: GetParams) throws(StoreError) -> Snapshot<JSONValue> {
        if let name = params.branch {
            let branch = try self.branch(named: name)
            let seq: UInt64
            if let at = params.at { seq = at } else { seq = try branch.latestSeq() }
            return Snapshot(seq: seq, value: try branch.value(at: seq, path: params.path))
        }
        if params.at == nil, let latest {
            let now = latest()
            return Snapshot(seq: now.seq, value: try Timeline<State>.slice(now.state, path: params.path, seq: now.seq))
        }
        let seq = try seq(params.at)
        return Snapshot(seq: seq, value: try timeline.value(at: seq, path: params.path))
    }

    /// `history`: one page of logged actions.
    public func history(_ params: HistoryParams) throws(StoreError) -> HistoryPage {
        if let name = params.branch {
            guard params.changed == nil, params.correlationId == nil, !params.newestFirst else {
                throw StoreError(.invalidArgument, "a branch's history is read oldest first, by range and types only (not 'changed', 'correlationId' or 'order')")
            }
            let page = try branch(named: name).history(from: params.from, to: params.to, limit: params.limit, types: params.types)
            return HistoryPage(actions: page.actions, next: page.next)
        }
        let page = try timeline.history(
            from: params.from, to: params.to, limit: params.limit, types: params.types, correlationId: params.correlationId,
            newestFirst: params.newestFirst, changed: params.changed
        )
        return HistoryPage(actions: page.actions, next: page.next)
    }

    /// `blame`: the last change of each leaf under a path.
    public func blame(_ params: BlameParams) throws(StoreError) -> BlameOutcome {
        // Blaming the latest state (the usual question) takes the running store's, not a rebuild.
        let known = params.at == nil ? latest.map { now in let snapshot = now(); return (snapshot.seq, snapshot.state) } : nil
        let result = try timeline.blame(path: params.path, at: params.at, limit: params.limit, after: params.after, known: known)
        return BlameOutcome(
            seq: result.seq,
            entries: result.entries.map { entry in
                BlameOutcome.Entry(path: entry.path, seq: entry.action?.seq, type: entry.action?.type, time: entry.action?.time, peer: entry.action?.peer)
            },
            next: result.next
        )
    }

    /// `diff`: the patch from the state at `from` to the state at `to`.
    public func diff(_ params: DiffParams) throws(StoreError) -> DiffResult {
        guard params.branch != nil || params.toBranch != nil else {
            return DiffResult(patch: try timeline.diff(from: params.from, to: params.to, path: params.path))
        }
        // Across histories: the state at `from` of one (the branch, or the main history), at `to`
        // of the other (`toBranch`, the main history with `toMain`, else the same).
        let before = try get(GetParams(path: params.path, at: params.from, branch: params.branch))
        let after = try get(GetParams(path: params.path, at: params.to, branch: params.toMain ? nil : params.toBranch ?? params.branch))
        return DiffResult(patch: JSONPatch(from: before.value, to: after.value).prefixed(with: params.path))
    }

    /// A branch of this store's history, read as a timeline.
    func branch(named name: String) throws(StoreError) -> BranchTimeline<State> {
        try timeline.branch(named: name)
    }

    /// `branchCreate`: a branch of the main history at a seq.
    public func createBranch(_ params: BranchCreateParams) throws(StoreError) -> BranchInfoResult {
        let record = try timeline.createBranch(params.name, at: params.at)
        return BranchInfoResult(name: record.name, at: record.forkSeq, seq: record.forkSeq, created: record.created)
    }

    /// `branches`: every branch, by name.
    public func branches() throws(StoreError) -> BranchList {
        BranchList(branches: try timeline.branches().map { info in
            BranchInfoResult(name: info.record.name, at: info.record.forkSeq, seq: info.latestSeq, created: info.record.created)
        })
    }

    /// `branchDelete`: a branch and its actions removed.
    public func deleteBranch(_ params: BranchDeleteParams) throws(StoreError) -> BranchDeleteResult {
        try timeline.deleteBranch(params.name)
        return BranchDeleteResult()
    }

    /// `replay`: the state without some actions, up to `to` or the latest seq.
    public func replay(_ params: ReplayParams) throws(StoreError) -> ReplayResult {
        let to = try seq(params.to)
        let whatIf = try timeline.replay(to: to, skipping: params.skip, path: params.path)
        return ReplayResult(value: whatIf.value, refused: whatIf.refused.map { SeqReason(seq: $0.seq, reason: $0.reason) })
    }

    /// `digest`: the SHA-256 of the value at the path at `at`, or at the latest seq.
    public func digest(_ params: DigestParams) throws(StoreError) -> DigestResult {
        let value = try get(params.state)
        return Self.digest(value.value, seq: value.seq)
    }

    /// The digest of a value: SHA-256 of its canonical JSON text, as `get` would send it.
    public static func digest(_ value: JSONValue, seq: UInt64) -> DigestResult {
        DigestResult(seq: seq, sha256: Checkpoint.hex(SHA256.hash(data: value.serialized())))
    }

    /// `bisect`: the first seq at which the condition holds; ``progress`` is told of each probe.
    public func bisect(_ params: BisectParams) throws(StoreError) -> BisectOutcome {
        let result = try timeline.bisect(through: params.through, progress: progress) { params.condition.holds(in: $0) }
        return BisectOutcome(seq: result.seq, through: result.through, probes: result.probes)
    }

    /// `find`: every run of seqs at which the condition holds; ``progress`` is told of the seq
    /// reached against the last one.
    public func find(_ params: FindParams) throws(StoreError) -> FindOutcome {
        let last: UInt64
        if let to = params.to { last = to } else { last = try timeline.latestSeq() }
        let report = progress
        let result = try timeline.find(
            params.condition, from: params.from, to: params.to, limit: params.limit,
            progress: { seq in report(Int(clamping: seq), Int(clamping: last)) }
        )
        return FindOutcome(
            ranges: result.ranges.map { FindOutcome.Range(from: $0.from, to: $0.to) }, through: result.through, next: result.next
        )
    }
}
