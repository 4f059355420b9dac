import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// A method answered from the store's timeline: every read of protocol 1. Its one answer serves
/// the daemon (on its query pool) and `reel --data-dir` (in process) alike, through
/// ``TimelineQueries/answer(_:_:)``.
///
/// Adding a read method: declare it in ReelProtocol (``ProtocolMethod``, listed in
/// ``Method/all``), conform it here, and the daemon, the client's `call`, the offline tool and the
/// page's backend answer it (docs/ARCHITECTURE.md, "Adding a method").
public protocol TimelineQuery: ProtocolMethod {
    /// The answer to a call of this method.
    static func answer<State: StoreState>(_ params: Params, from queries: TimelineQueries<State>) throws(StoreError) -> Result

    /// Whether the answer needs only the latest state, which a daemon has in memory: it then
    /// answers on the connection's task instead of sending the call to its query pool. Default
    /// `false`.
    static func readsOnlyTheLatestState(_ params: Params) -> Bool
}

extension TimelineQuery {
    public static func readsOnlyTheLatestState(_ params: Params) -> Bool { false }
}

extension TimelineQueries {
    /// The answer to a call of `method`.
    ///
    /// - Throws: `.invalidArgument` for a method that is not a ``TimelineQuery`` (one that needs a
    ///   daemon: `dispatch`, `subscribe`…); what the query throws.
    public func answer<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) throws(StoreError) -> M.Result {
        guard let query = method as? any TimelineQuery.Type else {
            throw StoreError(.invalidArgument, "'\(M.name)' is answered only by a running daemon")
        }
        return try answer(query, params, as: method)
    }

    private func answer<Q: TimelineQuery, M: ProtocolMethod>(_ query: Q.Type, _ params: M.Params, as method: M.Type) throws(StoreError) -> M.Result {
        // `Q` is `M` (the caller cast one to the other), so both casts hold.
        try Q.answer(params as! Q.Params, from: self) as! M.Result
    }

    /// Whether a call of `method` needs only the latest state (``TimelineQuery/readsOnlyTheLatestState(_:)``).
    public static func readsOnlyTheLatestState<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) -> Bool {
        guard let query = method as? any TimelineQuery.Type else { return false }
        return readsOnlyTheLatestState(query, params)
    }

    private static func readsOnlyTheLatestState<Q: TimelineQuery>(_ query: Q.Type, _ params: Any) -> Bool {
        guard let params = params as? Q.Params else { return false }
        return Q.readsOnlyTheLatestState(params)
    }
}

// The read methods of protocol 1, each answered once.

extension Method.Hello: TimelineQuery {
    /// Offline: the data directory's seq and reducer, for a peer that may only read. (A daemon
    /// answers `hello` itself, with the peer's permissions and its shared log.)
    public static func answer<State>(_ params: HelloParams, from queries: TimelineQueries<State>) throws(StoreError) -> ServerHello {
        ServerHello(
            version: ReelRelease.version, seq: try queries.latestSeq(), reducer: queries.timeline.definition.identity,
            permissions: [Permission.read.rawValue]
        )
    }
}

extension Method.Get: TimelineQuery {
    public static func answer<State>(_ params: GetParams, from queries: TimelineQueries<State>) throws(StoreError) -> Snapshot<JSONValue> {
        try queries.get(params)
    }

    public static func readsOnlyTheLatestState(_ params: GetParams) -> Bool { params.at == nil && params.branch == nil }
}

extension Method.History: TimelineQuery {
    public static func answer<State>(_ params: HistoryParams, from queries: TimelineQueries<State>) throws(StoreError) -> HistoryPage {
        try queries.history(params)
    }
}

extension Method.Diff: TimelineQuery {
    public static func answer<State>(_ params: DiffParams, from queries: TimelineQueries<State>) throws(StoreError) -> DiffResult {
        try queries.diff(params)
    }
}

extension Method.Replay: TimelineQuery {
    public static func answer<State>(_ params: ReplayParams, from queries: TimelineQueries<State>) throws(StoreError) -> ReplayResult {
        try queries.replay(params)
    }
}

extension Method.Stats: TimelineQuery {
    /// The data directory's figures; a daemon adds its counters (see `MethodHandler`).
    public static func answer<State>(_ params: StatsParams, from queries: TimelineQueries<State>) throws(StoreError) -> StatsResult {
        try queries.stats()
    }
}

extension Method.Checkpoints: TimelineQuery {
    public static func answer<State>(_ params: CheckpointsParams, from queries: TimelineQueries<State>) throws(StoreError) -> CheckpointList {
        try queries.checkpoints()
    }
}

extension Method.Verify: TimelineQuery {
    public static func answer<State>(_ params: VerifyParams, from queries: TimelineQueries<State>) throws(StoreError) -> VerifyOutcome {
        try queries.verify(params)
    }
}

extension Method.Backup: TimelineQuery {
    public static func answer<State>(_ params: BackupParams, from queries: TimelineQueries<State>) throws(StoreError) -> BackupOutcome {
        try queries.backup(params)
    }
}

extension Method.HandOver: TimelineQuery {
    /// Offline there is no daemon to hand over: only a running daemon answers it.
    public static func answer<State>(_ params: HandOverParams, from queries: TimelineQueries<State>) throws(StoreError) -> HandOverResult {
        throw StoreError(.invalidArgument, "'handOver' is answered only by a running daemon")
    }
}

extension Method.TakeOverProgress: TimelineQuery {
    /// Offline there is no daemon being taken over.
    public static func answer<State>(_ params: TakeOverProgressReport, from queries: TimelineQueries<State>) throws(StoreError) -> TakeOverProgressAcknowledgement {
        throw StoreError(.invalidArgument, "'takeOverProgress' is answered only by a running daemon")
    }
}

extension Method.Bisect: TimelineQuery {
    public static func answer<State>(_ params: BisectParams, from queries: TimelineQueries<State>) throws(StoreError) -> BisectOutcome {
        try queries.bisect(params)
    }
}

extension Method.Find: TimelineQuery {
    public static func answer<State>(_ params: FindParams, from queries: TimelineQueries<State>) throws(StoreError) -> FindOutcome {
        try queries.find(params)
    }
}

extension Method.Blame: TimelineQuery {
    public static func answer<State>(_ params: BlameParams, from queries: TimelineQueries<State>) throws(StoreError) -> BlameOutcome {
        try queries.blame(params)
    }
}

extension Method.Scan: TimelineQuery {
    public static func answer<State>(_ params: ScanParams, from queries: TimelineQueries<State>) throws(StoreError) -> ScanOutcome {
        try queries.scan()
    }
}

extension Method.Digest: TimelineQuery {
    public static func answer<State>(_ params: DigestParams, from queries: TimelineQueries<State>) throws(StoreError) -> DigestResult {
        try queries.digest(params)
    }

    public static func readsOnlyTheLatestState(_ params: DigestParams) -> Bool { params.at == nil && params.state.branch == nil }
}

extension Method.BranchCreate: TimelineQuery {
    public static func answer<State>(_ params: BranchCreateParams, from queries: TimelineQueries<State>) throws(StoreError) -> BranchInfoResult {
        try queries.createBranch(params)
    }
}

extension Method.Branches: TimelineQuery {
    public static func answer<State>(_ params: BranchesParams, from queries: TimelineQueries<State>) throws(StoreError) -> BranchList {
        try queries.branches()
    }
}

extension Method.BranchDelete: TimelineQuery {
    public static func answer<State>(_ params: BranchDeleteParams, from queries: TimelineQueries<State>) throws(StoreError) -> BranchDeleteResult {
        try queries.deleteBranch(params)
    }
}

extension Method.Describe: TimelineQuery {
    public static func answer<State>(_ params: DescribeParams, from queries: TimelineQueries<State>) throws(StoreError) -> StoreDescription {
        let definition = queries.timeline.definition
        return StoreDescription(reducer: definition.identity, actions: definition.actionDescriptions)
    }

    public static func readsOnlyTheLatestState(_ params: DescribeParams) -> Bool { true }
}
