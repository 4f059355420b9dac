import Foundation
import Logging
import ReelCore
import ReelCrashPoints
import ReelJSON
import ReelStorage

/// An event-sourced store on a data directory: dispatch actions, read the state, travel in time.
///
/// Opening a store restores the newest checkpoint made by the current reducer version and replays
/// the log after it. Dispatches from any number of tasks go to one writer thread, which commits
/// the actions that arrive together in one transaction and one sync (group commit) and answers
/// each dispatcher only once its actions are durable.
///
/// ```swift
/// let store = try Store(path: "./reel-data", definition: .stock)
/// let result = try await store.dispatch(Action(type: "set", payload: ["path": "/n", "value": 1]))
/// print(result.seq, store.snapshot.state)
/// await store.close()
/// ```
public final class Store<State: StoreState>: Sendable {
    public let definition: StoreDefinition<State>
    public let directory: DataDirectory
    /// Read-only time travel over this store's log.
    public let timeline: Timeline<State>
    /// Dispatches to branches of the history (``BranchWriter``), beside the main writer.
    public let branchWriter: BranchWriter<State>
    let writer: Writer<State>
    /// The change index's build going on in the background since the store opened, if any.
    private let changeIndexBuild: ChangeIndexBuild?

    /// Opens (or creates) the store in `path`.
    ///
    /// - Parameter folded: The state at a seq of this log, already folded with these reducers
    ///   (by a ``FoldBeside`` while another daemon served the directory): the store goes on from
    ///   it, replaying only the actions after it, instead of from a checkpoint.
    /// - Throws: ``StoreError`` `.storage` with a reason a person can act on: the directory is
    ///   unreadable, of an incompatible format, made for another reducer, or damaged;
    ///   `.unreadableHistory` when the log holds actions these reducers cannot read.
    public init(
        path: String, definition: StoreDefinition<State>, options: StoreOptions = StoreOptions(),
        logger: Logger = Logger(label: "reel.store"), continuing folded: FoldedState<State>? = nil
    ) throws(StoreError) {
        if let armed = CrashPoint.armed {
            logger.warning("REEL_CRASH_POINT is set: this process kills itself (or, with :hang, stops that thread) at \(armed.point.rawValue), reach \(armed.nth) (crash tests only)")
        }
        var storageOptions = options.storage
        storageOptions.readOnly = false
        do {
            directory = try DataDirectory(path: path, reducerName: definition.identity.name, options: storageOptions)
        } catch {
            throw StoreError(error)
        }
        if directory.upgradedRecords > 0 {
            logger.notice("upgraded \(path) to storage format \(DataDirectory.formatVersion): \(directory.upgradedRecords) records now carry checksums")
        }
        if directory.journalActionsRecovered > 0 {
            logger.notice("moved \(directory.journalActionsRecovered) acknowledged actions from the journal into the log (the last run ended before LMDB had them)")
        }
        directory.observeJournalFailures { [logger] error in
            logger.error("moving acknowledged actions into LMDB failed; they stay in the journal, and dispatches wait for a retry: \(error.message)")
        }
        if directory.staleReadersCleared > 0 {
            logger.notice("cleared \(directory.staleReadersCleared) stale LMDB reader slots left by killed processes")
        }
        self.definition = definition
        timeline = Timeline(directory: directory, definition: definition)
        branchWriter = BranchWriter(timeline: timeline)
        try Self.checkReadable(directory: directory, definition: definition)

        let started = ContinuousClock.now
        let latest = try timeline.latestSeq()
        var lastReport = started
        let restored = try timeline.reconstruct(at: latest, continuing: folded) { reached in
            let now = ContinuousClock.now
            guard now - lastReport >= options.openProgressInterval else { return }
            lastReport = now
            let percent = latest == 0 ? 100 : Int(Double(reached) * 100 / Double(latest))
            logger.info("replaying the log to open the store: seq \(reached) of \(latest) (\(percent)%)")
            options.openProgress?(reached, latest)
        }
        let openDuration = ContinuousClock.now - started
        for skipped in restored.skippedCheckpoints {
            logger.notice("checkpoint at seq \(skipped.seq) ignored: \(skipped.reason); rebuilding by replay")
        }
        for refusal in restored.refused.prefix(10) {
            logger.warning("logged action \(refusal.seq) is refused by the current reducers and left out: \(refusal.reason)")
        }
        logger.info(
            "store open",
            metadata: [
                "path": "\(path)", "seq": "\(restored.seq)", "reducer": "\(definition.identity)",
                "checkpoint": "\(restored.checkpointSeq.map(String.init) ?? "none")",
                "replayed": "\(restored.replayed)", "took": "\(openDuration)",
            ]
        )
        Self.rebuildCheckpoints(restored.damagedCheckpoints, timeline: timeline, logger: logger)
        if options.changeIndex {
            // The writer records what later actions change when the reducer predicts it, and an
            // index behind the log is built in the background meanwhile; else the journal's
            // applier works them out, folding them into a copy of its own, once the index has
            // been brought up to date here. That build says how far it got, as a replay at open
            // does, which keeps a service manager's start timeout from running out.
            var lastIndexReport = ContinuousClock.now
            changeIndexBuild = try ChangeIndexer.start(
                timeline: timeline, latest: restored.seq, latestState: restored.state, feed: definition.predictChanges == nil,
                mayDelayOpen: options.changeIndexMayDelayOpen, minimumPart: options.changeIndexBuildMinimumPart, logger: logger
            ) { reached in
                let now = ContinuousClock.now
                guard now - lastIndexReport >= options.openProgressInterval else { return }
                lastIndexReport = now
                let percent = Int(Double(reached) * 100 / Double(max(restored.seq, 1)))
                logger.info("building the change index: seq \(reached) of \(restored.seq) (\(percent)%)")
                options.openProgress?(reached, restored.seq)
            }
        } else {
            changeIndexBuild = nil
        }
        let lastCheckpoint: Checkpoint?
        do {
            lastCheckpoint = try directory.checkpointHeaders().filter { $0.reducer == definition.identity }.last
        } catch {
            throw StoreError(error)
        }
        writer = Writer(
            definition: definition, directory: directory, options: options, logger: logger,
            restored: restored, lastCheckpointSeq: lastCheckpoint?.seq ?? 0, lastCheckpointTime: lastCheckpoint?.time,
            openDuration: openDuration
        )
        writer.start()
    }

    /// Refuses a log whose actions the reducers cannot read, naming each (type, version) and the
    /// first seq that holds it, before anything is replayed or served: a build that dropped a
    /// type, or a rollback to a build older than the payloads, would otherwise leave those
    /// actions out of the state one by one.
    static func checkReadable(directory: DataDirectory, definition: StoreDefinition<State>) throws(StoreError) {
        let stored: [StoredActionType]
        do {
            stored = try directory.storedActionTypes()
        } catch {
            throw StoreError(error)
        }
        let problems = stored.compactMap { entry in
            definition.problem(reading: entry.type, version: entry.version).map { "\($0) (first at seq \(entry.firstSeq))" }
        }
        guard !problems.isEmpty else { return }
        throw StoreError(
            .unreadableHistory,
            "the log holds actions that \(definition.identity) cannot read: " + problems.joined(separator: "; ")
                + ". Serve this directory with a build that reads them (`check-history --data-dir` tells which actions fail)"
        )
    }

    /// Replaces damaged checkpoints met while restoring with new ones at the same seqs, rebuilt
    /// by replay (which passes over every damaged checkpoint), so the next open does not pay for
    /// the damage again. Best effort: the store works without them, so a failure is only logged.
    private static func rebuildCheckpoints(_ seqs: [UInt64], timeline: Timeline<State>, logger: Logger) {
        guard !seqs.isEmpty else { return }
        do throws(StoreError) {
            var rebuilt: [Checkpoint] = []
            for seq in seqs {
                let state = try timeline.state(at: seq)
                rebuilt.append(Checkpoint(
                    seq: seq, reducer: timeline.definition.identity, time: .now(), state: try state.jsonValueOrThrow(seq: seq)
                ))
            }
            do {
                try timeline.directory.commit(CommitBatch(checkpoints: rebuilt))
            } catch {
                throw StoreError(error)
            }
            logger.notice("rebuilt damaged checkpoints", metadata: ["seqs": "\(seqs)"])
        } catch {
            logger.error("could not rebuild the damaged checkpoints \(seqs): \(error.message); they stay passed over")
        }
    }

    /// The latest committed seq and state.
    public var snapshot: StoreSnapshot<State> { writer.shared.withLock { $0.snapshot } }

    /// The latest committed seq now, then after every commit (coalesced: a slow reader sees the
    /// newest seq, not each one). Ends when the store closes. Read the state that goes with a seq
    /// from ``snapshot`` (it may already be newer) or from ``timeline``.
    public func commits() -> AsyncStream<UInt64> {
        writer.watchers.makeStream(current: snapshot.seq)
    }

    /// Calls `observer` after each commit that appended actions, with those actions and what they
    /// changed in the state (`nil` when the writer did not record it: the change index is off, or
    /// the reducers cannot tell), on the writer thread: it must only hand them on (it holds up the
    /// next commit while it runs).
    public func observeCommittedActions(_ observer: @escaping @Sendable ([ActionEnvelope], CommitChanges?) -> Void) {
        writer.watchers.observe(observer)
    }

    /// Counters (commits, actions, refusals, checkpoints) and the commits' latency percentiles.
    public var statistics: StoreStatistics {
        // The histograms are copied under the lock and summarized outside it.
        let (statistics, figures) = writer.shared.withLock { ($0.statistics, $0.figures) }
        var summarized = statistics
        summarized.commitMicros = DistributionSummary(figures.commitMicros)
        summarized.syncMicros = DistributionSummary(figures.syncMicros)
        summarized.actionsPerCommit = DistributionSummary(figures.actionsPerCommit)
        summarized.lmdbCommitMicros = DistributionSummary(figures.lmdbCommitMicros)
        summarized.journalBacklogBytes = writer.directory.journalBacklogBytes
        return summarized
    }

    /// Dispatches one action and returns once it is durable.
    ///
    /// - Parameters:
    ///   - action: the action.
    ///   - peer: who dispatches it (the server passes the socket's peer credentials).
    ///   - expectedSeq: accept only if the latest seq is this one (optimistic concurrency).
    ///   - idempotencyKey: a retry with the same key returns the first result, marked duplicate.
    ///   - meta: the provenance the client gave (trace, correlation, cause, source), logged with
    ///     the action.
    /// - Throws: ``StoreError``: `.rejected`, `.unknownActionType`, `.seqMismatch`,
    ///   `.seqOutOfRange` (a bad `@revert`), `.storage` (not durable, not acknowledged),
    ///   `.shuttingDown`.
    @discardableResult
    public func dispatch(
        _ action: Action, peer: Peer = .currentProcess, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil,
        meta: ActionMeta? = nil
    ) async throws(StoreError) -> DispatchResult {
        try await dispatch(batch: [action], peer: peer, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta)
    }

    /// Dispatches several actions atomically: all are accepted and durable with consecutive seqs,
    /// or none is logged.
    @discardableResult
    public func dispatch(
        batch actions: [Action], peer: Peer = .currentProcess, expectedSeq: UInt64? = nil,
        idempotencyKey: String? = nil, meta: ActionMeta? = nil
    ) async throws(StoreError) -> DispatchResult {
        try await submit(batch: actions, peer: peer, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta).result()
    }

    /// Hands a dispatch to the writer now and returns at once. Dispatches submitted one after the
    /// other get their seqs in that order, which a connection relies on to keep its pipelined
    /// dispatches in request order while they still share commits.
    ///
    /// With `commitIfAlone`, a dispatch submitted while no other is in flight and the writer is
    /// idle is committed on the caller's thread, before this returns (the ticket is then settled):
    /// the server's event loop does so, as Redis does, sparing a client that sends one dispatch at
    /// a time two thread hops per dispatch. The caller blocks for the sync meanwhile.
    public func submit(
        batch actions: [Action], peer: Peer = .currentProcess, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil,
        meta: ActionMeta? = nil, commitIfAlone: Bool = false
    ) -> DispatchTicket {
        guard !actions.isEmpty else {
            return DispatchTicket(failed: StoreError(.invalidArgument, "a batch needs at least one action"))
        }
        var batch = DispatchBatch()
        let ticket = prepare(batch: actions, peer: peer, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta, into: &batch)
        submit(batch, commitIfAlone: commitIfAlone)
        return ticket
    }

    /// With a shared log: how this node stands in it (cheap: no histograms are summarized).
    public var sharedLogStatus: SharedLogStatus? { writer.shared.withLock { $0.statistics.sharedLog } }

    /// With a shared log: waits until the writer has tried it once (checked that this node's copy
    /// agrees with the log, and followed it) and returns how the node stands; `nil` without a
    /// shared log. A daemon refuses to start when ``SharedLogStatus/refusal`` is set, and serves
    /// reads from its copy while the log is unreachable.
    public func sharedLogFirstContact() async -> SharedLogStatus? {
        guard writer.options.sharedLog != nil else { return nil }
        _ = await probeWriter()
        return statistics.sharedLog
    }

    /// Whether the writer is alive and able to commit: a probe goes through the same queue as the
    /// dispatches and the writer answers it when it reaches it. Returns only then, so a writer
    /// stuck (in a sync that never returns, say) never answers; `false` when it answered that no
    /// commit can succeed until the store is reopened, or when the store is closing. A daemon's
    /// watchdog pings its service manager only after this returns `true`.
    public func probeWriter() async -> Bool {
        let ticket = DispatchTicket()
        let request = DispatchRequest(
            actions: [], peer: .currentProcess, expectedSeq: nil, idempotencyKey: nil, isProbe: true,
            ticket: ticket, counted: false
        )
        guard writer.queue.submit(request) == nil else { return false }
        return (try? await ticket.result()) != nil
    }

    deinit {
        // Dropped without `close()`: let the writer thread end (nothing can be waiting on it, since
        // a dispatch in flight keeps the store alive). No shutdown checkpoint is written.
        writer.queue.close()
    }

    /// Waits until the change index has caught up with the log, when the store opened with it
    /// behind and builds it in the background (the time the daemon did not have to wait).
    public func changeIndexCaughtUp() async {
        guard let changeIndexBuild else { return }
        await Self.offThePool { changeIndexBuild.wait() }
    }

    /// Runs a blocking wait on a thread of its own, not on the cooperative pool.
    private static func offThePool(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread.startNamed("reel-waiter") {
                body()
                continuation.resume()
            }
        }
    }

    /// Stops accepting dispatches, finishes those already queued, writes a checkpoint and releases
    /// the writer. Later dispatches fail with `.shuttingDown`. Safe to call more than once.
    /// - Parameter writingCheckpoint: Whether to write a checkpoint of the latest state (when
    ///   ``StoreOptions/checkpointAtShutdown`` is set): not when a newer daemon waits to open the
    ///   directory with reducers of its own (a take-over).
    public func close(writingCheckpoint: Bool = true) async {
        // What the build committed stays; the next open goes on from there.
        if let changeIndexBuild { await Self.offThePool { changeIndexBuild.stop() } }
        await writer.finish(writingCheckpoint: writingCheckpoint)
        // The journal is drained: no commit needs the change index's feed, and the directory
        // should not keep the feed's copy of the state alive.
        directory.attachChangeIndexFeed(nil)
    }
}
