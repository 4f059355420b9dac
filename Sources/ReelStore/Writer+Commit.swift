import Foundation
import ReelCore
import ReelCrashPoints
import ReelJSON
import ReelStorage

extension Writer {
    /// A group run through middleware and reducers, not yet durable: the writer's copy of the
    /// state already holds the accepted actions.
    ///
    /// Its answers name requests by their index in ``requests`` rather than hold copies of them:
    /// a copy of a request (and its release) retained and released each of its references, twice
    /// per dispatch.
    struct GroupEvaluation {
        var batch: CommitBatch
        /// The group's requests.
        var requests: ArraySlice<DispatchRequest> = []
        /// Accepted requests (and duplicates of keys first used in this group), with the answer
        /// each gets once the batch is durable.
        var pending: [(index: Int, result: DispatchResult)] = []
        /// Answers that do not wait for the commit: refusals, duplicates of durable keys, probes.
        var answers: [(index: Int, outcome: Result<DispatchResult, StoreError>)] = []
        /// The latest seq with the accepted actions.
        var workingSeq: UInt64
        var refused = 0
        var duplicates = 0
        /// The writer's count of dispatches in flight, which each answer takes its request out of.
        let inFlight: InFlightCount
        let time = Timestamp.now()
        let started = ContinuousClock.now

        /// Whether some answer refuses a dispatch (as opposed to a duplicate or a probe).
        var refusesSome: Bool { refused > 0 }

        /// Sends the answers that do not wait for the commit.
        ///
        /// Here and in ``answerPending(failure:)`` the requests are reached through an unsafe
        /// buffer, in place: through the slice's subscript, each `reply` ran on a copy of its
        /// request (every reference retained and released: 5% of the writer's samples at 50 x 16).
        func sendAnswers() {
            let start = requests.startIndex
            requests.withUnsafeBufferPointer { requests in
                for (index, outcome) in answers { requests[index - start].reply(outcome, inFlight: inFlight) }
            }
        }

        /// Answers every pending request: with its result, or with `failure`.
        func answerPending(failure: StoreError? = nil) {
            let start = requests.startIndex
            requests.withUnsafeBufferPointer { requests in
                for (index, result) in pending {
                    requests[index - start].reply(failure.map { .failure($0) } ?? .success(result), inFlight: inFlight)
                }
            }
        }
    }

    /// Runs one group: every request through middleware and reducers, all accepted actions (and
    /// any ready checkpoints) in one durable commit, then the answers. With a shared log, the
    /// group goes there first (``commitSharedGroup(_:checkpoints:sharedLog:)``).
    ///
    /// No work in proportion to the state's size: the reducers change the writer's copy in place
    /// (a value whose storage another copy shared would be copied whole on the first change: a
    /// state of a million keys took 147 ms per dispatch). The writer keeps two copies that take
    /// turns, as in a left-right scheme: once the group is durable, its copy is published to the
    /// readers, and the copy the readers had becomes the writer's, caught up by folding the
    /// group's actions into it once more (reducers are pure: the same actions give the same state,
    /// as every replay relies on). Memory: two states, whose unchanged parts the two share anyway
    /// until they are changed.
    ///
    /// With a tracer, the group is a `commit` span (``CommitSpan``).
    func commitGroup(_ requests: ArraySlice<DispatchRequest>, checkpoints: [Checkpoint]) {
        let span = options.tracer.map { CommitSpan(requests, tracer: $0, seqBefore: seq) }
        defer { span?.end(seqAfter: seq, failure: poisoned) }
        if let sharedLog = options.sharedLog {
            commitSharedGroup(requests, checkpoints: checkpoints, sharedLog: sharedLog)
            return
        }
        let evaluation = evaluate(requests, checkpoints: checkpoints)
        span?.reduced()
        evaluation.sendAnswers()
        commitAndPublish(evaluation)
    }

    /// Middleware, validation and reducers for every request of the group, into the writer's copy
    /// of the state. Answers nothing yet.
    func evaluate(_ requests: ArraySlice<DispatchRequest>, checkpoints: [Checkpoint]) -> GroupEvaluation {
        var group = GroupEvaluation(batch: CommitBatch(checkpoints: checkpoints), requests: requests, workingSeq: seq, inFlight: inFlight)
        if recordsChanges { group.batch.changes = ChangePostings(capacity: requests.count) }
        group.batch.envelopes.reserveCapacity(requests.count)  // one action each, as most are
        var keysInGroup: [String: DedupRecord] = [:]
        /// The keys already durable before this group, of all its requests (one read transaction).
        var durableKeys: Result<[String: DedupRecord], StorageError>?

        // The requests' fields are read in place (`requests[index].…`), not from a copy.
        for index in requests.indices {
            if let poisoned {
                group.answers.append((index, .failure(StoreError(.storage, poisoned))))
                continue
            }
            if requests[index].isProbe {
                if let broken = directory.writeFailure {
                    group.answers.append((index, .failure(StoreError(.storage, "no commit can succeed until a restart: \(broken.message)"))))
                } else {
                    group.answers.append((index, .success(DispatchResult(seqs: group.workingSeq...group.workingSeq))))
                }
                continue
            }
            let idempotencyKey = requests[index].idempotencyKey
            if let key = idempotencyKey {
                if let known = keysInGroup[key] {
                    // The first dispatch with this key is in this very group: answer after the commit.
                    group.pending.append((index, DispatchResult(seqs: known.seqs, duplicate: true)))
                    group.duplicates += 1
                    continue
                }
                if durableKeys == nil {
                    // The group's keys are looked up together when the first one comes.
                    let keys = requests.compactMap(\.idempotencyKey)
                    keysInGroup.reserveCapacity(keys.count)
                    durableKeys = Result { () throws(StorageError) in try directory.dedupRecords(forKeys: keys) }
                }
                switch durableKeys! {
                case .success(let durable):
                    if let known = durable[key] {
                        // Already durable: answered whatever becomes of this group's commit.
                        group.answers.append((index, .success(DispatchResult(seqs: known.seqs, duplicate: true))))
                        group.duplicates += 1
                        continue
                    }
                case .failure(let error):
                    group.answers.append((index, .failure(StoreError(error))))
                    continue
                }
            }
            if let expected = requests[index].expectedSeq, expected != group.workingSeq {
                group.answers.append((index, .failure(StoreError(
                    .seqMismatch, "expectedSeq \(expected) does not match the latest seq \(group.workingSeq)",
                    currentSeq: group.workingSeq
                ))))
                group.refused += 1
                continue
            }
            do throws(StoreError) {
                let actions = requests[index].actions
                guard !actions.isEmpty else {
                    throw StoreError(.invalidArgument, "a batch needs at least one action")
                }
                try reduce(
                    actions, peer: requests[index].peer, idempotencyKey: idempotencyKey, meta: requests[index].meta,
                    after: group.workingSeq, time: group.time, appendingTo: &group.batch.envelopes, changes: &group.batch.changes
                )
                let first = group.workingSeq + 1
                let last = group.workingSeq + UInt64(actions.count)
                group.workingSeq = last
                if let key = idempotencyKey {
                    let record = DedupRecord(firstSeq: first, count: UInt64(actions.count))
                    keysInGroup[key] = record
                    group.batch.dedup.append((key, record))
                }
                group.pending.append((index, DispatchResult(seqs: first...last)))
            } catch {
                group.answers.append((index, .failure(error)))
                group.refused += 1
            }
        }
        return group
    }

    /// Makes the group's batch durable in the data directory, publishes the state and answers
    /// the pending requests (or fails them all if the commit fails).
    ///
    /// - Parameter appendedToSharedLog: the shared log already has the actions, so a failure
    ///   here is not "not durable" (they reach this node's copy by following).
    func commitAndPublish(_ group: GroupEvaluation, appendedToSharedLog: Bool = false) {
        let batch = group.batch
        var syncDuration: Duration?
        if !batch.isEmpty {
            CrashPoint.commitBefore.reach()
            let syncStarted = ContinuousClock.now
            do {
                checkpointSpacing.logged(bytes: try directory.appendDurably(batch))
                syncDuration = ContinuousClock.now - syncStarted
            } catch {
                failCommit(error, group: group, appendedToSharedLog: appendedToSharedLog)
                return
            }
            CrashPoint.commitAfter.reach()
        }
        let workingSeq = group.workingSeq
        let committed = batch.envelopes.count
        seq = workingSeq
        let published = committed > 0 ? state : nil
        let commitDuration = ContinuousClock.now - group.started
        var previous: State? = shared.withLock { shared in
            var previous: State?
            if let published {
                previous = shared.snapshot.state
                shared.snapshot = StoreSnapshot(seq: workingSeq, state: published)
            }
            shared.statistics.seq = workingSeq
            if committed > 0 {
                shared.statistics.commits += 1
                shared.statistics.actionsCommitted += UInt64(committed)
                shared.statistics.largestCommit = max(shared.statistics.largestCommit, committed)
                shared.figures.record(commit: commitDuration, sync: syncDuration, actions: committed)
            }
            shared.statistics.dispatchesRefused += UInt64(group.refused)
            shared.statistics.duplicates += UInt64(group.duplicates)
            return previous
        }
        recordCheckpoints(batch.checkpoints)
        if committed > 0 {
            watchers.published(batch.envelopes, changes: batch.changes.flatMap { CommitChanges($0, of: batch.envelopes) })
        }
        group.answerPending()
        if !group.pending.isEmpty { CrashPoint.ackAfter.reach() }
        if committed > 0 {
            instruments.actionsAcknowledged.increment(by: committed)
            instruments.commitDuration.recordNanoseconds(commitDuration.nanoseconds)
            if let syncDuration { instruments.syncDuration.recordNanoseconds(syncDuration.nanoseconds) }
            instruments.actionsPerCommit.record(committed)
        }
        // After the answers: the catch-up only has to be done before the next group's reducers.
        if previous != nil {
            if keepsSharingSmallState(afterCommitting: committed) {
                // The writer's copy stays the published one; the next group's changes copy what
                // they touch of it, which for a small state costs less than this group's actions
                // folded once more.
                previous = nil
            } else {
                // Moved, not bound: a second reference would make the first change copy it whole.
                state = previous.take()!
                catchUp(with: batch.envelopes, published: published!)
            }
        }
        requestCheckpointIfDue(at: workingSeq, published: published ?? shared.withLock { $0.snapshot.state })
    }

    /// Whether the writer may keep sharing the state it just published instead of catching the
    /// readers' old copy up: when the state is small (its last checkpoint at most
    /// ``smallStateBytes``) and the group large (more than ``catchUpAtMost`` actions). The next
    /// group's first changes then copy the containers they touch, at most the whole small state
    /// (plus what the actions since that checkpoint added: checkpoints come every 10,000 actions),
    /// where the catch-up would fold every action of the group a second time (50 clients × 16
    /// pipelined: groups of about 160 actions, the catch-up 5% of `reeld`'s CPU).
    func keepsSharingSmallState(afterCommitting actions: Int) -> Bool {
        let stateBytes = checkpointSpacing.lastCheckpointBytes
        return actions > Self.catchUpAtMost && stateBytes > 0 && stateBytes <= Self.smallStateBytes
    }

    static var smallStateBytes: UInt64 { 64 << 10 }
    static var catchUpAtMost: Int { 16 }

    /// Folds the group's actions into the writer's copy, which is the copy the readers had until
    /// now (its only reference, unless a reader still holds the old snapshot).
    func catchUp(with envelopes: [ActionEnvelope], published: State) {
        do throws(StoreError) {
            for envelope in envelopes {
                try fold.apply(envelope, to: &state, stateAt: { to throws(StoreError) in try self.revertTarget(to) })
            }
        } catch {
            // The same actions on the same state failed the second time: a reducer that is not
            // pure. Carry on from the published copy (sharing it costs one whole copy later).
            logger.error("a reducer gave another outcome for the same action on the same state: \(error.message); reducers must be pure")
            state = published
        }
    }

    /// Middleware, validation and reducers for one request, into `state`, all or nothing: its
    /// actions are appended to `envelopes` (the group's, accepted before it), what they changed
    /// to `changes`; on a throw, `state`, `envelopes` and `changes` are as they were. (Appended in
    /// place: an array per request was one more allocation per dispatch.)
    private func reduce(
        _ actions: [Action], peer: Peer, idempotencyKey: String?, meta: ActionMeta?, after latest: UInt64, time: Timestamp,
        appendingTo envelopes: inout [ActionEnvelope], changes: inout ChangePostings?
    ) throws(StoreError) {
        if actions.count == 1 {
            // Reducers leave the state unchanged when they throw.
            envelopes.append(
                try reduce(actions[0], peer: peer, idempotencyKey: idempotencyKey, meta: meta, seq: latest + 1, time: time, changes: &changes)
            )
            return
        }
        // A batch is atomic: a later action's failure must undo the earlier ones. Undone by
        // starting again from the published state and the group's earlier actions, rather than
        // by working on a copy, which would copy the whole state for every batch.
        let accepted = envelopes.count
        envelopes.reserveCapacity(accepted + actions.count)
        do throws(StoreError) {
            for (offset, action) in actions.enumerated() {
                let actionSeq = latest + UInt64(offset) + 1
                envelopes.append(
                    try reduce(action, peer: peer, idempotencyKey: idempotencyKey, meta: meta, seq: actionSeq, time: time, changes: &changes)
                )
            }
        } catch {
            if envelopes.count > accepted {
                envelopes.removeSubrange(accepted...)
                changes?.removeActions(after: latest)
                rollBack(to: envelopes)
            }
            throw error
        }
    }

    /// Puts `state` back to the published state with `accepted` folded in again.
    private func rollBack(to accepted: [ActionEnvelope]) {
        state = shared.withLock { $0.snapshot.state }
        do throws(StoreError) {
            for envelope in accepted {
                try fold.apply(envelope, to: &state, stateAt: { to throws(StoreError) in try self.revertTarget(to) })
            }
        } catch {
            // Folded once already on this very state: only a reducer that is not pure gets here.
            poisoned = "a reducer gave another outcome for the same action on the same state (\(error.message)); reducers must be pure"
            logger.critical("\(poisoned!)")
        }
    }

    private func reduce(
        _ action: Action, peer: Peer, idempotencyKey: String?, meta: ActionMeta?, seq actionSeq: UInt64, time: Timestamp,
        changes: inout ChangePostings?
    ) throws(StoreError) -> ActionEnvelope {
        let context = DispatchContext(seq: actionSeq, time: time, peer: peer, meta: meta)
        let processed = try definition.prepareToLog(action, state: state, context: context)
        let envelope = ActionEnvelope(
            seq: actionSeq, action: processed, time: time, peer: peer, idempotencyKey: idempotencyKey, meta: meta
        )
        try fold(envelope, recordingInto: &changes)
        changes?.endAction(seq: actionSeq)
        return envelope
    }

    /// Folds `envelope` into the writer's state and, with `changes`, records into its current
    /// action what it changed (the caller ends the action): predicted from the state before and
    /// the payload (``StoreDefinition/predictChanges``), else by comparing the states before and
    /// after. On a throw, the state is as it was and nothing is recorded.
    ///
    /// Recorded here, on the fold the writer does anyway, the change index costs a prediction per
    /// action, where the journal's applier would fold every action again into a copy of its own.
    func fold(_ envelope: ActionEnvelope, recordingInto changes: inout ChangePostings?) throws(StoreError) {
        guard changes != nil else {
            try fold.apply(envelope, to: &state, stateAt: { to throws(StoreError) in try self.revertTarget(to) })
            return
        }
        changes!.startAction()
        // An action of no version, applied and recorded in one walk when the reducer can.
        if envelope.action.version == nil, let applyRecordingChanges, applyRecordingChanges(&state, envelope, &changes!.recorder) { return }
        if try fold.applyPredictingChanges(envelope, to: &state, recorder: &changes!.recorder, stateAt: { to throws(StoreError) in try self.revertTarget(to) }) { return }
        // Not predicted (a patch whose operations build on one another, `@revert`): compared.
        // The copy held meanwhile makes the reducers copy what they change, once.
        let before = state
        try fold.apply(envelope, to: &state, stateAt: { to throws(StoreError) in try self.revertTarget(to) })
        do throws(StoreError) {
            changes!.recorder.record(at: [], from: try before.jsonValueOrThrow(seq: envelope.seq - 1), to: try state.jsonValueOrThrow(seq: envelope.seq))
        } catch {
            // A state that does not convert to JSON: the change goes unfollowed from the root.
            changes!.recorder.recordUnfollowed(at: [])
        }
    }

    /// The state `@revert` restores: committed history only (store actions run in a group of
    /// their own, so everything before them is committed). Passed in a closure literal, not as
    /// `revertTarget`: the method's value would retain the writer for every action.
    func revertTarget(_ to: UInt64) throws(StoreError) -> State {
        guard to <= seq else {
            throw StoreError(.seqOutOfRange, "cannot revert to \(to): the latest committed seq is \(seq)")
        }
        // The published copy, not `state`: this runs while the reducers hold `state` for changing.
        return to == seq ? shared.withLock { $0.snapshot.state } : try timeline.state(at: to)
    }

    func failCommit(_ error: StorageError, group: GroupEvaluation, appendedToSharedLog: Bool = false) {
        logger.error("commit failed; \(group.pending.count) dispatches not acknowledged: \(error.message)")
        state = shared.withLock { $0.snapshot.state }  // the group's changes are not durable
        // Never carry on as if the data had reached the disk: the state stays at the last
        // successful commit, and if the log on disk does not end where we think, stop writing.
        let onDisk = Result { () throws(StorageError) in try directory.latestSeq() }
        if (try? onDisk.get()) != seq {
            poisoned = "the log could not be confirmed after a failed commit (\(error.message)); restart the store"
            // Why it could not be read says what broke (LMDB's MDB_PANIC after a failed meta-page
            // write, say), which the commit's own error may not.
            let found = switch onDisk {
            case .success(let latest): "\(latest)"
            case .failure(let readError): "unreadable: \(readError.message)"
            }
            logger.critical("\(poisoned!)", metadata: ["expected": "\(seq)", "found": "\(found)"])
        }
        shared.withLock { shared in
            shared.statistics.commitFailures += 1
            shared.statistics.dispatchesRefused += UInt64(group.refused)
        }
        instruments.commitFailures.increment()
        let failure = appendedToSharedLog
            ? StoreError(.storage, "in the shared log but not in this node's copy, so not acknowledged: \(error.message)", underlying: error)
            : StoreError(.storage, "not durable, not acknowledged: \(error.message)", underlying: error)
        group.answerPending(failure: failure)
    }

    /// If a checkpoint is due at `seq` (committed) and none is being encoded, starts encoding it on
    /// the encoder's thread: of `published`, the published state at `seq`, while checkpoints are
    /// small, or else of the encoder's own copy (`CheckpointEncoder`). The writer stores it with a
    /// later commit. One encode at a time: a large state takes seconds to encode, and each
    /// queued encode would write the whole state.
    func requestCheckpointIfDue(at seq: UInt64, published: @autoclosure () -> State) {
        guard checkpointSpacing.isDue(at: seq), !checkpointEncoder.isEncoding else { return }
        checkpointSpacing.checkpointed(at: seq)
        // Small when the last checkpoint was; with none to go by (the store's first, or one
        // opened from a log without any), the size is unknown and the state may be large: the
        // encoder rebuilds its own copy from the log then, off the write path.
        let lastBytes = checkpointSpacing.lastCheckpointBytes
        let small = lastBytes > 0 && lastBytes < UInt64(CheckpointEncoder<State>.ownCopyAboveBytes)
        let queue = self.queue
        checkpointEncoder.encode(at: seq, published: small ? published() : nil) { checkpoint in
            CrashPoint.checkpointEncoded.reach()
            queue.submit(checkpoint: checkpoint)
        }
    }

    func recordCheckpoints(_ checkpoints: [Checkpoint]) {
        guard let newest = checkpoints.max(by: { $0.seq < $1.seq }) else { return }
        checkpointSpacing.encoded(stateBytes: newest.stateBytes.count)
        shared.withLock { shared in
            shared.statistics.checkpointsWritten += UInt64(checkpoints.count)
            shared.statistics.lastCheckpointSeq = max(shared.statistics.lastCheckpointSeq, newest.seq)
            shared.statistics.lastCheckpointTime = .now()
        }
        instruments.checkpointsWritten.increment(by: checkpoints.count)
    }
}
