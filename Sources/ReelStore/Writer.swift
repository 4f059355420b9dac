import Foundation
import Logging
import ReelCore
import ReelJSON
import ReelStorage
import Synchronization

/// The one owner of the write path and the current state. Runs on its own thread:
/// take waiting requests → middleware and reducers → one LMDB transaction and one sync → publish
/// the state → answer each dispatcher → maybe start a checkpoint (encoded elsewhere).
///
/// Every `var` below is touched only by whoever holds `commitToken`: the writer thread, an event
/// loop committing a lone dispatch (``commitAlone(_:)``), or `finish` after the writer thread has
/// exited; what others read goes through `shared`.
final class Writer<State: StoreState>: @unchecked Sendable {
    struct Shared {
        var snapshot: StoreSnapshot<State>
        var statistics: StoreStatistics
        var figures = CommitFigures()
    }

    let definition: StoreDefinition<State>
    /// The definition's fold, made once: a `Fold` made per action copied the definition, a
    /// retain of each of its members.
    let fold: Fold<State>
    let directory: DataDirectory
    let timeline: Timeline<State>
    let options: StoreOptions
    let logger: Logger
    let queue: WriteQueue<DispatchRequest>
    /// Dispatches submitted and not yet answered.
    let inFlight = InFlightCount()
    /// Held to commit; `true` inside once the store finished (no more commits).
    let commitToken = Mutex(false)
    let watchers = CommitWatchers()
    let shared: Mutex<Shared>
    private let exited = ExitSignal()
    let checkpointEncoder: CheckpointEncoder<State>
    let instruments: StoreInstruments

    /// The writer's own copy of the state, changed in place by the reducers. Readers see another
    /// copy, `shared.snapshot.state`: see ``commitGroup(_:checkpoints:)`` for how the two take turns.
    var state: State
    var seq: UInt64
    /// Whether the writer records what each action changes for the change index, as it folds it
    /// (the index is on and the reducer predicts its changes); otherwise the journal's applier
    /// works it out (``ChangeIndexer``), or there is no index.
    let recordsChanges: Bool
    /// The definition's ``StoreDefinition/applyRecordingChanges`` when the writer records changes
    /// and no type has versions to upcast: held here so that each dispatch calls it directly
    /// (through ``fold`` the call copied the whole `Fold`, with a retain of each of the
    /// definition's closures, for every action).
    let applyRecordingChanges: (@Sendable (inout State, ActionEnvelope, inout JSONChangeRecorder) -> Bool)?
    /// When the next checkpoint is due; its `lastSeq` is the last one asked for.
    var checkpointSpacing: CheckpointSpacing
    /// Set when a commit failed and the log on disk no longer matches what the writer believes:
    /// from then on every dispatch fails with a storage error until the store is reopened.
    var poisoned: String?
    /// With a shared log: whether this node's copy was found to agree with it (checked at the
    /// first contact), and why it must not serve the log's store when it does not.
    var sharedLogAgreed = false
    var sharedLogRefusal: String?
    /// Set by the shared log's wake-ups: follow it before the next group.
    let sharedLogFollowWanted = Atomic<Bool>(false)
    /// The last seq this node appended to the shared log: its own appends' notifications, which
    /// may arrive before the local commit, are no reason to follow.
    let sharedLogAppendedThrough = Atomic<UInt64>(0)

    init(
        definition: StoreDefinition<State>, directory: DataDirectory, options: StoreOptions, logger: Logger,
        restored: Reconstruction<State>, lastCheckpointSeq: UInt64, lastCheckpointTime: Timestamp?,
        openDuration: Duration
    ) {
        self.definition = definition
        self.fold = Fold(definition: definition)
        self.directory = directory
        self.timeline = Timeline(directory: directory, definition: definition)
        self.options = options
        self.logger = logger
        self.queue = WriteQueue(idleSpin: options.writerIdleSpin)
        // The writer's copy gets storage of its own now: the readers' copy shares it, and the
        // first dispatch would otherwise copy a large state whole (hundreds of ms for a million
        // keys) while its client waits.
        self.state = restored.state.unsharingTopLevelStorage()
        self.seq = restored.seq
        self.recordsChanges = options.changeIndex && definition.predictChanges != nil
        self.applyRecordingChanges = recordsChanges && definition.versions.isEmpty ? definition.applyRecordingChanges : nil
        self.checkpointSpacing = CheckpointSpacing(options: options, lastSeq: lastCheckpointSeq)
        checkpointSpacing.encoded(stateBytes: restored.checkpointBytes)
        self.checkpointEncoder = CheckpointEncoder(timeline: timeline, logger: logger)
        var statistics = StoreStatistics()
        statistics.seq = restored.seq
        statistics.lastCheckpointSeq = lastCheckpointSeq
        statistics.restoredFromCheckpoint = restored.checkpointSeq
        statistics.replayedAtOpen = restored.replayed
        statistics.openDuration = openDuration
        statistics.lastCheckpointTime = lastCheckpointTime
        if let sharedLog = options.sharedLog {
            statistics.sharedLog = SharedLogStatus(location: sharedLog.location)
        }
        instruments = StoreInstruments(factory: options.metrics)
        shared = Mutex(Shared(snapshot: StoreSnapshot(seq: restored.seq, state: restored.state), statistics: statistics))
    }

    func start() {
        // The journal's applier times its LMDB commits for `stats` and the metrics: once per
        // commit (every 128 KiB or 100 ms), under the lock the writer takes once per group.
        directory.observeJournalCommits { [weak self] duration in
            guard let self else { return }
            instruments.lmdbCommitDuration.recordNanoseconds(duration.nanoseconds)
            shared.withLock { $0.figures.lmdbCommitMicros.record(duration.microseconds) }
        }
        if let sharedLog = options.sharedLog {
            sharedLog.watch { [weak self] latest in self?.sharedLogWoke(latest: latest) }
            sharedLogWoke(latest: nil)  // follow (and check agreement) before anyone dispatches
        }
        // A long tail replayed at open deserves a checkpoint now rather than N actions from now:
        // asked for before the thread starts (from then on only the writer thread touches its
        // state), of the readers' copy (the encoder holding the writer's would make its first
        // change copy it).
        requestCheckpointIfDue(at: seq, published: shared.withLock { $0.snapshot.state })
        // The thread holds the writer only while `run` runs: once the queue is closed and drained,
        // the writer (and with it the LMDB environment) can go as soon as the store is released,
        // so the same directory can be opened again right after `close()`.
        let exited = self.exited
        Thread.startNamed("reel-writer") { [weak self] in
            self?.run()
            exited.signal()
        }
    }

    // Specialized for the stock store's state, as ``Timeline``'s entry points are (see there).
    @_specialize(where State == JSONValue)
    private func run() {
        while let work = queue.next(limit: options.maxActionsPerCommit, weight: { $0.actions.count }) {
            var checkpoints = work.checkpoints
            var start = 0
            repeat {
                // A request with a store action (`@revert`) reads committed history: it goes in a
                // group of its own, after everything before it is committed.
                var end = start
                while end < work.requests.count {
                    if work.requests[end].containsStoreAction && end > start { break }
                    end += 1
                    if work.requests[end - 1].containsStoreAction { break }
                }
                let group = work.requests[start..<end]
                let taken = checkpoints
                commitToken.withLock { _ in commitGroup(group, checkpoints: taken) }
                checkpoints = []
                start = end
            } while start < work.requests.count
        }
    }

    /// Commits `request` on the calling thread if no other dispatch is in flight and the writer
    /// is idle; `false` (nothing done) otherwise, or once the store is closing.
    @_specialize(where State == JSONValue)
    func commitAlone(_ request: DispatchRequest) -> Bool {
        // With a shared log a commit waits for another server: never on an event loop.
        guard !request.containsStoreAction, options.sharedLog == nil,
            inFlight.value.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        let committed = commitToken.withLockIfAvailable { finished -> Bool in
            guard !finished, queue.isOpenAndEmpty else { return false }
            commitGroup([request][...], checkpoints: [])
            return true
        } ?? false
        if !committed { inFlight.value.subtract(1, ordering: .relaxed) }
        return committed
    }

    /// Another node may have appended: have the writer follow the log before its next group (one
    /// wake-up request queued at a time).
    func sharedLogWoke(latest: UInt64?) {
        if let latest {
            noteSharedLogLatest(latest)
            let known = max(shared.withLock { $0.snapshot.seq }, sharedLogAppendedThrough.load(ordering: .acquiring))
            if latest <= known { return }
        }
        guard !sharedLogFollowWanted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = queue.submit(DispatchRequest(
            actions: [], peer: .currentProcess, expectedSeq: nil, idempotencyKey: nil, isProbe: true, ticket: DispatchTicket(), counted: false
        ))
    }

    /// Waits for the writer thread to drain the queue and stop, then writes the final checkpoint.
    func finish(writingCheckpoint: Bool = true) async {
        queue.close()
        await exited.wait()
        // A lone dispatch committing on an event loop finishes first; none starts after.
        commitToken.withLock { $0 = true }
        watchers.finish()
        do {
            try directory.closeJournal()
        } catch {
            // Durable all the same: the next open moves them into LMDB.
            logger.error("acknowledged actions stay in the journal until the next open: \(error.message)")
            return
        }
        checkpointEncoder.waitForPending()  // let an encode in flight land in the queue
        var checkpoints = queue.takeCheckpoints()
        let written = shared.withLock { $0.statistics.lastCheckpointSeq }
        if poisoned == nil, writingCheckpoint, options.checkpointAtShutdown, seq > written, !checkpoints.contains(where: { $0.seq == seq }),
            let checkpoint = CheckpointEncoder.checkpoint(of: state, at: seq, reducer: definition.identity, logger: logger)
        {
            checkpoints.append(checkpoint)
        }
        guard !checkpoints.isEmpty else { return }
        do {
            try directory.commit(CommitBatch(checkpoints: checkpoints))
            recordCheckpoints(checkpoints)
            logger.info("checkpoint written at shutdown", metadata: ["seq": "\(seq)"])
        } catch {
            logger.error("could not write the shutdown checkpoint: \(error.message)")
        }
    }
}

/// Lets async code wait for a thread to end.
final class ExitSignal: Sendable {
    private let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}
