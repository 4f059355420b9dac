import Synchronization
import ReelCore
import ReelJSON
import ReelProtocol

/// Where a `reel` command reads from and writes to: a running daemon (``LiveSource``, over its
/// socket) or a data directory opened read-only (``OfflineSource``). Both answer a call of any
/// protocol method: live over the socket, offline in process through the query layer the daemon
/// uses (`TimelineQueries`). Commands are written once against this protocol, so each works the
/// same way live and offline.
protocol StoreSource: Sendable {
    /// What the source is, for messages: "the daemon at …", "the data directory … (read-only)".
    var label: String { get }
    /// How many actions to ask for per page of history: a live page is one response line, and
    /// must stay under the client's line limit even when every action is as large as a request
    /// may be.
    var historyPageSize: Int { get }

    /// Calls a method of the protocol.
    ///
    /// - Parameter progress: Told of a long call's progress (probes so far, an estimate of the
    ///   total) where the source can tell: offline `bisect`.
    func call<M: ProtocolMethod>(
        _ method: M.Type, _ params: M.Params, progress: (@Sendable (Int, Int) -> Void)?
    ) async throws(ToolError) -> M.Result

    /// Follows changes at `path` until the task is cancelled.
    /// (`branch`: a branch of the history instead of the main one.)
    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode, branch: String?) async throws(ToolError) -> WatchFeed
    /// Releases the connection or the environment.
    func close() async
}

// What the commands ask, each one call of the protocol.
extension StoreSource {
    func call<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) async throws(ToolError) -> M.Result {
        try await call(method, params, progress: nil)
    }

    /// The reducer the source folds actions with.
    func reducer() async throws(ToolError) -> ReducerIdentity {
        try await call(Method.Hello.self, HelloParams(client: ToolContext.current.programName, protocolVersion: WireProtocol.version)).reducer
    }

    func latestSeq() async throws(ToolError) -> UInt64 {
        try await call(Method.Hello.self, HelloParams(client: ToolContext.current.programName, protocolVersion: WireProtocol.version)).seq
    }

    /// The value at `path` at `seq` (now when `nil`), with the seq it was read at.
    func value(at seq: UInt64?, path: JSONPointer, branch: String? = nil) async throws(ToolError) -> (seq: UInt64, value: JSONValue) {
        let snapshot = try await call(Method.Get.self, GetParams(path: path, at: seq, branch: branch))
        return (snapshot.seq, snapshot.value)
    }

    func history(
        from: UInt64, to: UInt64?, limit: Int, types: Set<String>?, correlationId: String? = nil, changed: JSONPointer? = nil,
        newestFirst: Bool = false, branch: String? = nil
    ) async throws(ToolError) -> (actions: [ActionEnvelope], next: UInt64?) {
        let page = try await call(
            Method.History.self,
            HistoryParams(
                from: from, to: to, limit: limit, types: types, correlationId: correlationId, newestFirst: newestFirst, changed: changed, branch: branch
            )
        )
        return (page.actions, page.next)
    }

    /// The patch from the state at `from` of `branch` (the main history's when `nil`) to the
    /// state at `to` of `toBranch`, or of the same history.
    func diff(from: UInt64, to: UInt64, path: JSONPointer, branch: String? = nil, toBranch: String? = nil) async throws(ToolError) -> JSONPatch {
        try await call(Method.Diff.self, DiffParams(from: from, to: to, path: path, branch: branch, toBranch: toBranch)).patch
    }

    /// The seq of a branch's last action (its fork seq while it has none), from the list of
    /// branches: no state is rebuilt (`watch --branch` offline asks it at every poll).
    func latestSeq(ofBranch name: String) async throws(ToolError) -> UInt64 {
        guard let branch = try await call(Method.Branches.self, BranchesParams()).branches.first(where: { $0.name == name }) else {
            throw ToolError(RPCError(code: RPCError.Code.invalidParams, message: "no branch named '\(name)'"))
        }
        return branch.seq
    }

    func replay(to: UInt64?, skip: Set<UInt64>, path: JSONPointer) async throws(ToolError) -> (value: JSONValue, refused: [SeqReason]) {
        let result = try await call(Method.Replay.self, ReplayParams(to: to, skip: skip, path: path))
        return (result.value, result.refused)
    }

    func checkpoints() async throws(ToolError) -> [CheckpointInfo] {
        try await call(Method.Checkpoints.self, CheckpointsParams()).checkpoints
    }

    /// Verifies one segment: `from` is 0 or a checkpoint verified before.
    func verify(from: UInt64, through: UInt64) async throws(ToolError) -> VerifyOutcome {
        try await call(Method.Verify.self, VerifyParams(from: from, through: through))
    }

    /// Checks every stored record's checksum and reports every damaged one.
    func scan() async throws(ToolError) -> ScanOutcome {
        try await call(Method.Scan.self, ScanParams())
    }

    /// The first seq at which `condition` holds, up to `through` (the latest when `nil`), in
    /// O(log n) state computations (a daemon searches with its checkpoints, in one request).
    func bisect(
        _ condition: JSONCondition, through: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(ToolError) -> BisectAnswer {
        progress(0, 1)
        let outcome = try await call(Method.Bisect.self, BisectParams(condition: condition, through: through), progress: progress)
        progress(outcome.probes, outcome.probes)
        return BisectAnswer(seq: outcome.seq, latest: outcome.through, probes: outcome.probes)
    }

    /// Every run of seqs in `from…to` at which `condition` holds, page after page of the
    /// method's answers, each run handed to `each` as it comes.
    func find(
        _ condition: JSONCondition, from: UInt64, to: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void,
        each: (FindOutcome.Range) -> Void
    ) async throws(ToolError) -> FindOutcome {
        var params = FindParams(condition: condition, from: from, to: to, limit: FindParams.maxLimit)
        while true {
            let outcome = try await call(Method.Find.self, params, progress: progress)
            outcome.ranges.forEach(each)
            guard let next = outcome.next else { return outcome }
            params.from = next
        }
    }

    func stats() async throws(ToolError) -> StatsResult {
        try await call(Method.Stats.self, StatsParams())
    }

    func backup(to path: String) async throws(ToolError) -> BackupOutcome {
        try await call(Method.Backup.self, BackupParams(path: path))
    }

    /// Dispatches actions (one, or an atomic batch); only a daemon can.
    func dispatch(
        _ actions: [Action], expectedSeq: UInt64?, idempotencyKey: String?, meta: ActionMeta? = nil, branch: String? = nil
    ) async throws(ToolError) -> (seqs: ClosedRange<UInt64>, duplicate: Bool) {
        var params = actions.count == 1
            ? DispatchParams(action: actions[0], expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta)
            : DispatchParams(batch: actions, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta)
        params.branch = branch
        let outcome = try await call(Method.Dispatch.self, params)
        return (outcome.seqs, outcome.duplicate)
    }
}

/// The sources a command run opened, closed when it ends (an in-process run, as in tests or a
/// benchmark, must not leak connections).
final class OpenedSources: Sendable {
    private let sources = Mutex<[any StoreSource]>([])

    func add(_ source: any StoreSource) {
        sources.withLock { $0.append(source) }
    }

    func closeAll() async {
        for source in sources.withLock({ list in defer { list = [] }; return list }) {
            await source.close()
        }
    }
}

/// The answer of `bisect`.
struct BisectAnswer: Sendable {
    /// The first seq at which the condition holds; `nil` when it does not hold at the latest seq.
    var seq: UInt64?
    /// The last seq searched.
    var latest: UInt64
    /// States the condition was evaluated on.
    var probes: Int
}

/// A change seen by `watch`.
struct WatchUpdate: Sendable {
    enum Change: Sendable {
        case value(JSONValue)
        case patch(JSONPatch)
        case actions([ActionEnvelope])
    }

    var seq: UInt64
    var change: Change
}

/// The start of a watch (the seq and, in value and patch modes, the value there) and what follows.
struct WatchFeed: Sendable {
    var seq: UInt64
    var value: JSONValue?
    var updates: AsyncThrowingStream<WatchUpdate, any Error>
}
