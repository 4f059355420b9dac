import Foundation
import Logging
import ReelCore
import ReelJSON
import ReelStorage
import Synchronization

/// Keeps a data directory's change index up to date where the writer does not record it: at
/// open, folding the actions the index does not cover yet (``start(timeline:latest:latestState:feed:logger:)``);
/// and, for a reducer that cannot predict its changes, every commit, with a copy of the state of
/// its own, at the last indexed seq, into which it folds each commit's actions (on the journal
/// applier's thread, just before the commit: ``Timeline/foldRecordingChanges(_:into:recorder:)``).
///
/// That copy costs memory (as the checkpoint encoder's does) and one more fold per action, off
/// the acknowledgement path. When it loses its place (a commit failed after it had folded) it
/// answers nothing more, and the index stays behind until the store next opens and brings it up
/// to date.
final class ChangeIndexer<State: StoreState>: ChangeIndexFeed {
    private struct Position {
        var state: State
        var seq: UInt64
        /// `state` as JSON, when the last fold worked it out.
        var json: JSONValue?
    }

    private weak let directory: DataDirectory?
    private let definition: StoreDefinition<State>
    private let logger: Logger
    private let position: Mutex<Position?>

    private init(directory: DataDirectory, definition: StoreDefinition<State>, state: State, seq: UInt64, logger: Logger) {
        self.directory = directory
        self.definition = definition
        self.logger = logger
        position = Mutex(Position(state: state, seq: seq, json: nil))
    }

    /// How many actions bringing the index up to date folds per commit: each commit touches every
    /// list its actions changed once, so fewer, larger commits write less (a million actions of
    /// postings take tens of MiB of memory).
    static var catchUpCommitSize: UInt64 { 1 << 20 }

    /// Brings the index of `timeline`'s directory up to date (emptying it first when it was
    /// built under another reducer, is ahead of the log, or its status is damaged), then, with
    /// `feed`, works out the entries of every later commit (without, the writer records them).
    ///
    /// - Parameters:
    ///   - latest: the log's latest seq, whose state is `latestState` (the store has just rebuilt it).
    ///   - progress: called with the seq reached now and then while the index is built.
    /// - Returns: the build going on in the background, when the writer records later entries
    ///   (without `feed`) and the index was behind: the store serves meanwhile.
    static func start(
        timeline: Timeline<State>, latest: UInt64, latestState: State, feed: Bool, mayDelayOpen: Bool = true,
        minimumPart: UInt64 = StoreOptions().changeIndexBuildMinimumPart, logger: Logger, progress: ((UInt64) -> Void)? = nil
    ) throws(StoreError) -> ChangeIndexBuild? {
        let directory = timeline.directory
        var status: ChangeIndexStatus?
        do {
            status = try directory.changeIndexStatus()
            // Read whole once per open (about as fast as the disk reads it): a damaged list is
            // never answered from, and rebuilding it now costs less than replays at every query.
            if let damage = try directory.changeIndexDamage().first {
                logger.warning("the change index is damaged (\(damage.key ?? ""): \(damage.reason)): rebuilding it")
                status = nil
            }
        } catch {
            logger.warning("the change index is damaged (\(error.message)): rebuilding it")
            status = nil
        }
        let upToDate = status.map { $0.reducer == timeline.definition.identity && $0.indexedThrough == latest } ?? false
        if feed, !mayDelayOpen, !upToDate {
            logger.notice("the change index is left behind for this run (a take-over does not wait for it to be rebuilt): answers replay past it, and it is brought up to date at the next start")
            return nil
        }
        do {
            if status == nil || status!.reducer != timeline.definition.identity || status!.indexedThrough > latest {
                if let status, status.reducer != timeline.definition.identity {
                    logger.notice("the change index was built by \(status.reducer): rebuilding it for \(timeline.definition.identity)")
                }
                try directory.resetChangeIndex(reducer: timeline.definition.identity)
                status = ChangeIndexStatus(indexedThrough: directory.metadata.origin, reducer: timeline.definition.identity)
            }
        } catch {
            throw StoreError(error)
        }
        var indexed = status!.indexedThrough
        if indexed < latest, !feed {
            // The writer's entries continue the index once the build has caught up with the log.
            return ChangeIndexBuild.start(timeline: timeline, from: indexed, minimumPart: minimumPart, logger: logger)
        }
        if indexed < latest {
            let started = ContinuousClock.now
            var state = try timeline.state(at: indexed)
            let outcome = try timeline.foldChangeIndexCommits(
                after: indexed, state: &state, commitSize: catchUpCommitSize, minimumPart: minimumPart, latest: { latest },
                progress: progress
            )
            guard !outcome.moved else { throw StoreError(.storage, "the change index moved while it was being brought up to date") }
            indexed = outcome.through
            logger.info("change index brought up to date", metadata: ["through": "\(latest)", "took": "\(ContinuousClock.now - started)"])
        }
        guard feed else { return nil }
        let indexer = ChangeIndexer(
            directory: directory, definition: timeline.definition, state: latestState.unsharingTopLevelStorage(), seq: latest, logger: logger
        )
        directory.attachChangeIndexFeed(indexer)
        return nil
    }

    func postings(for actions: [ActionEnvelope]) -> ChangePostings? {
        guard let directory, let first = actions.first?.seq else { return nil }
        let timeline = Timeline(directory: directory, definition: definition)
        return position.withLock { (current: inout Position?) -> ChangePostings? in
            guard var place = current.take(), place.seq == first - 1 else { return nil }
            do throws(StoreError) {
                var postings = ChangePostings()
                for action in actions {
                    postings.startAction()
                    try timeline.foldRecordingChanges(action, into: &place.state, recorder: &postings.recorder, json: &place.json)
                    postings.endAction(seq: action.seq)
                }
                place.seq = actions.last!.seq
                current = place
                return postings
            } catch {
                logger.error("the change index stops at seq \(place.seq) until the store is opened again: \(error.message)")
                return nil
            }
        }
    }

    func postingsNotWritten() {
        position.withLock { $0 = nil }
        logger.warning("a commit did not take the change index's entries: the index stays behind until the store is opened again")
    }
}

extension Timeline {
    /// Folds `envelope` into `state` and records what it changed into `recorder` (whose current
    /// edit is empty): predicted from the payload when the definition can
    /// (``StoreDefinition/predictChanges``), else by comparing the states before and after as
    /// JSON. An action the reducers refuse changes nothing.
    @_specialize(where State == JSONValue)
    func foldRecordingChanges(
        _ envelope: ActionEnvelope, into state: inout State, recorder: inout JSONChangeRecorder
    ) throws(StoreError) {
        var json: JSONValue?
        try foldRecordingChanges(envelope, into: &state, recorder: &recorder, json: &json)
    }

    /// ``foldRecordingChanges(_:into:recorder:)`` for a fold through many actions: `json` is
    /// `state` as JSON when known (`nil` otherwise), and is left as the state after it when the
    /// comparison worked it out, so that a state that only converts to JSON at a cost (a typed
    /// app state) is converted once per action, not twice.
    @_specialize(where State == JSONValue)
    func foldRecordingChanges(
        _ envelope: ActionEnvelope, into state: inout State, recorder: inout JSONChangeRecorder, json: inout JSONValue?
    ) throws(StoreError) {
        try foldRecordingChanges(envelope, prepared: nil, into: &state, recorder: &recorder, json: &json, with: fold)
    }

    /// ``foldRecordingChanges(_:into:recorder:json:)`` with `fold`, made once for a run of
    /// actions: making it copies the definition, a retain of each of its members, and the
    /// build's parts on both cores made those shared reference counts go back and forth between
    /// them (5% of the build).
    @_specialize(where State == JSONValue)
    func foldRecordingChanges(
        _ envelope: ActionEnvelope, prepared: PreparedStockAction?, into state: inout State, recorder: inout JSONChangeRecorder,
        json: inout JSONValue?,
        with fold: borrowing Fold<State>
    ) throws(StoreError) {
        // A local function, not a closure value: passed to parameters that do not escape, it
        // borrows `self` where a closure value would copy it, retaining the data directory and
        // the definition's members for every action.
        func stateAt(_ to: UInt64) throws(StoreError) -> State { try self.state(at: to) }
        do {
            if try fold.applyPredictingChanges(envelope, prepared: prepared, to: &state, recorder: &recorder, stateAt: stateAt) {
                json = nil
                return
            }
        } catch where error.code == .rejected || error.code == .unknownActionType {
            return
        }
        let before: JSONValue
        if let known = json { before = known } else { before = try state.jsonValueOrThrow(seq: envelope.seq - 1) }
        do {
            try fold.apply(envelope, prepared: prepared, to: &state, stateAt: stateAt)
        } catch where error.code == .rejected || error.code == .unknownActionType {
            json = before
            return
        }
        let after = try state.jsonValueOrThrow(seq: envelope.seq)
        recorder.record(at: [], from: before, to: after)
        json = after
    }

    /// The change index's postings of `first…last`, folding them into `state` (the state at
    /// `first - 1`).
    ///
    /// - Parameters:
    ///   - checkEvery: how often `end` is asked: after each seq that is a multiple of it (a
    ///     power of two).
    ///   - end: asked with the seq just folded: the last seq to fold, that seq to end the fold
    ///     there (the postings then cover less); one before the next time it is asked, or `last`.
    @_specialize(where State == JSONValue)
    func changePostings(
        from first: UInt64, through last: UInt64, state: inout State, checkEvery: UInt64 = 4_096, end: ((UInt64) -> UInt64)? = nil
    ) throws(StoreError) -> ChangePostings {
        precondition(checkEvery > 0 && checkEvery & (checkEvery - 1) == 0, "checkEvery must be a power of two")
        let mask = checkEvery - 1
        var postings = ChangePostings()
        var json: JSONValue?
        var failure: StoreError?
        var lastToFold = last
        let fold = self.fold
        do {
            try directory.forEachLoggedActionReadingAhead(from: first, through: last, preparing: fold.prepares) { envelope, prepared in
                do throws(StoreError) {
                    let seq = envelope.seq
                    postings.startAction()
                    try foldRecordingChanges(envelope, prepared: prepared, into: &state, recorder: &postings.recorder, json: &json, with: fold)
                    postings.endAction(seq: seq)
                    if seq & mask == 0, let end { lastToFold = min(last, end(seq)) }
                    return seq < lastToFold
                } catch {
                    failure = error
                    return false
                }
            }
        } catch {
            throw StoreError.walking(error, "index changes")
        }
        if let failure { throw failure }
        return postings
    }
}
