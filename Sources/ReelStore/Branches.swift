import ReelCore
import ReelJSON
import ReelStorage
import Synchronization

/// A branch's history read as a timeline: the main history's state at the fork seq, then the
/// branch's own actions. Seqs at or before the fork are the main history's.
public struct BranchTimeline<State: StoreState>: Sendable {
    public let main: Timeline<State>
    public let branch: BranchRecord

    public init(main: Timeline<State>, branch: BranchRecord) {
        self.main = main
        self.branch = branch
    }

    var directory: DataDirectory { main.directory }

    /// The seq of the branch's last action (its fork seq while it has none).
    public func latestSeq() throws(StoreError) -> UInt64 {
        do { return try directory.latestSeq(of: branch) } catch { throw StoreError(error) }
    }

    /// The branch's state at `seq`: the main history's up to the fork, then its own actions folded.
    @_specialize(where State == JSONValue)
    public func state(at seq: UInt64) throws(StoreError) -> State {
        guard seq > branch.forkSeq else { return try main.state(at: seq) }
        let latest = try latestSeq()
        guard seq <= latest else { throw StoreError(.seqOutOfRange, "seq \(seq) is beyond the latest seq \(latest) of branch '\(branch.name)'") }
        var state = try main.state(at: branch.forkSeq)
        try fold(from: branch.forkSeq + 1, through: seq, into: &state)
        return state
    }

    /// Folds the branch's actions `first…last` into `state` (a refused one leaves it as it was, as
    /// a replay does).
    @_specialize(where State == JSONValue)
    func fold(from first: UInt64, through last: UInt64, into state: inout State) throws(StoreError) {
        let fold = Fold(definition: main.definition)
        do {
            try directory.forEachBranchEnvelope(branch, from: first, through: last) { envelope in
                do throws(StoreError) {
                    try fold.apply(envelope, to: &state) { (to: UInt64) throws(StoreError) -> State in try self.state(at: to) }
                } catch {
                    guard error.code == .rejected || error.code == .unknownActionType else { throw error }
                }
                return true
            }
        } catch {
            throw StoreError(error)
        }
    }

    /// The value at `path` in the state at `seq`.
    public func value(at seq: UInt64, path: JSONPointer) throws(StoreError) -> JSONValue {
        let state = try state(at: seq).jsonValueOrThrow(seq: seq)
        guard let value = state.value(at: path) else { throw StoreError(.pathNotFound, "nothing at \(path) at seq \(seq) of branch '\(branch.name)'") }
        return value
    }

    /// The actions `from…to` (clamped to the branch's latest), the main history's up to the fork
    /// and the branch's after it, at most `limit`, only of `types` when given.
    public func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) throws(StoreError) -> LogPage {
        guard limit > 0 else { throw StoreError(.invalidArgument, "limit must be at least 1") }
        let last = min(to ?? .max, try latestSeq())
        var page = LogPage(actions: [], next: nil)
        let take = { (envelope: ActionEnvelope) -> Bool in
            if let types, !types.contains(envelope.type) { return true }
            if page.actions.count == limit {
                page.next = envelope.seq
                return false
            }
            page.actions.append(envelope)
            return true
        }
        if from <= branch.forkSeq {
            page = try main.history(from: from, to: min(last, branch.forkSeq), limit: limit, types: types)
            guard page.next == nil else { return page }
        }
        do {
            try directory.forEachBranchEnvelope(branch, from: max(from, branch.forkSeq + 1), through: last, take)
        } catch {
            throw StoreError(error)
        }
        return page
    }
}

/// Dispatches to branches: each goes through the middleware and the reducers as on the main
/// history, against the branch's latest state, and is durable (one LMDB commit) when answered.
/// One at a time across all branches; the main history's writer is not involved.
public final class BranchWriter<State: StoreState>: Sendable {
    let timeline: Timeline<State>
    /// Each branch's latest state with its seq: the next dispatch goes on from it. (Keyed by the
    /// whole record: a branch deleted and made again under its name and id is another.)
    private let latest = Mutex<[BranchRecord: (seq: UInt64, state: State)]>([:])
    private let turn = Mutex<Void>(())
    /// Who is woken after each commit to a branch, by the branch's name.
    private let watchers = Mutex<(next: Int, byName: [String: [Int: @Sendable () -> Void]])>((0, [:]))

    /// The most branch states kept in memory.
    static var statesKept: Int { 8 }

    public init(timeline: Timeline<State>) {
        self.timeline = timeline
    }

    /// Folds `actions` (an atomic batch when more than one) into branch `name` and appends them.
    ///
    /// - Throws: ``StoreError`` `.notFound`-like `.invalidArgument` for an unknown branch,
    ///   `.rejected`, `.unknownActionType`, `.seqMismatch` for an `expectedSeq` that is not the
    ///   branch's latest, `.storage`.
    public func dispatch(
        _ actions: [Action], toBranch name: String, peer: Peer, expectedSeq: UInt64? = nil, meta: ActionMeta? = nil
    ) throws(StoreError) -> DispatchResult {
        try turn.withLock { _ throws(StoreError) in
            let directory = timeline.directory
            let record: BranchRecord
            do throws(StorageError) { record = try directory.branch(named: name) } catch { throw Self.noBranch(error) }
            let branch = BranchTimeline(main: timeline, branch: record)
            let head = try branch.latestSeq()
            if let expectedSeq, expectedSeq != head {
                throw StoreError(.seqMismatch, "expected seq \(expectedSeq) but the latest seq of branch '\(name)' is \(head)", currentSeq: head)
            }
            var state: State
            if let cached = latest.withLock({ $0[record] }), cached.seq == head {
                state = cached.state
            } else {
                state = try branch.state(at: head)
            }
            let time = Timestamp.now()
            let fold = Fold(definition: timeline.definition)
            var envelopes: [ActionEnvelope] = []
            for (offset, action) in actions.enumerated() {
                let seq = head + UInt64(offset) + 1
                let processed = try timeline.definition.prepareToLog(action, state: state, context: DispatchContext(seq: seq, time: time, peer: peer, meta: meta))
                let envelope = ActionEnvelope(seq: seq, action: processed, time: time, peer: peer, meta: meta)
                try fold.apply(envelope, to: &state) { (to: UInt64) throws(StoreError) -> State in try branch.state(at: to) }
                envelopes.append(envelope)
            }
            do throws(StorageError) { try directory.appendToBranch(record, envelopes) } catch { throw StoreError(error) }
            let last = head + UInt64(actions.count)
            latest.withLock { kept in
                // A few branches' states at most (a deleted branch's goes with the others).
                if kept.count >= Self.statesKept { kept.removeAll() }
                kept[record] = (last, state)
            }
            for wake in watchers.withLock({ Array(($0.byName[name] ?? [:]).values) }) { wake() }
            return DispatchResult(seqs: (head + 1)...last)
        }
    }

    /// The latest state of branch `name` as this writer left it after its last dispatch there,
    /// with its seq; `nil` when it keeps none (no dispatch since the daemon started, or evicted).
    public func keptState(of name: String) throws(StoreError) -> (seq: UInt64, state: State)? {
        let record: BranchRecord
        do throws(StorageError) { record = try timeline.directory.branch(named: name) } catch { throw Self.noBranch(error) }
        return latest.withLock { $0[record] }
    }

    /// A registration of ``watchCommits(to:_:)``.
    public struct Watch: Sendable {
        let name: String
        let id: Int
    }

    /// Calls `wake` after each commit to branch `name` (by this writer: the daemon's dispatches
    /// to it), until ``stopWatching(_:)``. `wake` runs on the committing thread: it only signals.
    public func watchCommits(to name: String, _ wake: @escaping @Sendable () -> Void) -> Watch {
        watchers.withLock { watchers in
            watchers.next += 1
            watchers.byName[name, default: [:]][watchers.next] = wake
            return Watch(name: name, id: watchers.next)
        }
    }

    public func stopWatching(_ watch: Watch) {
        watchers.withLock { watchers in
            watchers.byName[watch.name]?[watch.id] = nil
            if watchers.byName[watch.name]?.isEmpty == true { watchers.byName[watch.name] = nil }
        }
    }

    static func noBranch(_ error: StorageError) -> StoreError {
        error.code == .notFound ? StoreError(.invalidArgument, error.message) : StoreError(error)
    }
}

extension Timeline {
    /// The branch named `name`, read as a timeline.
    /// - Throws: `.invalidArgument` when there is none.
    public func branch(named name: String) throws(StoreError) -> BranchTimeline<State> {
        do {
            return BranchTimeline(main: self, branch: try directory.branch(named: name))
        } catch {
            throw BranchWriter<State>.noBranch(error)
        }
    }

    /// Forks the main history at `seq`: one record, nothing copied.
    /// - Throws: `.invalidArgument` for a name taken or not allowed, a seq beyond the latest.
    public func createBranch(_ name: String, at seq: UInt64) throws(StoreError) -> BranchRecord {
        do {
            return try directory.createBranch(name, at: seq)
        } catch {
            throw error.code == .invalidWrite ? StoreError(.invalidArgument, error.message) : StoreError(error)
        }
    }

    /// Every branch, by name, with its latest seq.
    public func branches() throws(StoreError) -> [BranchInfo] {
        do { return try directory.branches() } catch { throw StoreError(error) }
    }

    /// Removes a branch and its actions.
    public func deleteBranch(_ name: String) throws(StoreError) {
        do { try directory.deleteBranch(name) } catch { throw BranchWriter<State>.noBranch(error) }
    }
}

extension StoreDefinition {
    /// What the store does to a dispatched action before folding it: an older version's payload
    /// upcast, the middleware, the check that some reducer takes it, and the version it is logged
    /// at (the one the reducers read it at now, `nil` for 1).
    func prepareToLog(_ action: Action, state: State, context: DispatchContext) throws(StoreError) -> Action {
        do {
            // An older version's payload (or one naming its version) is upcast before the
            // middleware, which, like the reducers, reads only the latest.
            let current = action.version == nil && versions.isEmpty ? action : try versions.upcastDispatched(action)
            var processed = try runMiddleware(current, state: state, context: context)
            try checkKnown(processed)
            // Logged at the version the reducers read it at now (`nil` for 1), whatever the
            // middleware put there: a replay by a later version upcasts from it.
            if processed.version != nil || !versions.isEmpty {
                let latest = versions.latest(of: processed.type)
                processed.version = latest == 1 ? nil : latest
            }
            return processed
        } catch {
            throw StoreError(error)
        }
    }
}
