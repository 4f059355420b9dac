import Foundation
import ReelCore
import ReelCrashPoints
import ReelJSON
import ReelStorage

extension Writer {
    /// An accepted request waiting for the commit, with the answer it gets if the commit succeeds.
    private typealias Pending = (request: DispatchRequest, result: DispatchResult)

    /// Runs one group: every request through middleware and reducers, all accepted actions (and
    /// any ready checkpoints) in one durable commit, then the answers.
    func commitGroup(_ requests: ArraySlice<DispatchRequest>, checkpoints: [Checkpoint]) {
        var working = state
        var workingSeq = seq
        var batch = CommitBatch(checkpoints: checkpoints)
        var pending: [Pending] = []
        var keysInGroup: [String: DedupRecord] = [:]
        var refused = 0
        var duplicates = 0
        let now = Timestamp.now()

        for request in requests {
            if let poisoned {
                request.reply(.failure(StoreError(.storage, poisoned)))
                continue
            }
            if let key = request.idempotencyKey {
                if let known = keysInGroup[key] {
                    // The first dispatch with this key is in this very group: answer after the commit.
                    pending.append((request, DispatchResult(seqs: known.seqs, duplicate: true)))
                    duplicates += 1
                    continue
                }
                do {
                    if let known = try directory.dedupRecord(forKey: key) {
                        // Already durable: answer now, whatever becomes of this group's commit.
                        request.reply(.success(DispatchResult(seqs: known.seqs, duplicate: true)))
                        duplicates += 1
                        continue
                    }
                } catch {
                    request.reply(.failure(StoreError(error)))
                    continue
                }
            }
            if let expected = request.expectedSeq, expected != workingSeq {
                request.reply(.failure(StoreError(
                    .seqMismatch, "expectedSeq \(expected) does not match the latest seq \(workingSeq)",
                    currentSeq: workingSeq
                )))
                refused += 1
                continue
            }
            do throws(StoreError) {
                let envelopes = try reduce(request, into: &working, after: workingSeq, time: now)
                guard let first = envelopes.first, let last = envelopes.last else {
                    throw StoreError(.invalidArgument, "a batch needs at least one action")
                }
                workingSeq = last.seq
                batch.envelopes += envelopes
                if let key = request.idempotencyKey {
                    let record = DedupRecord(firstSeq: first.seq, count: UInt64(envelopes.count))
                    keysInGroup[key] = record
                    batch.dedup.append((key, record))
                }
                pending.append((request, DispatchResult(seqs: first.seq...last.seq)))
            } catch {
                request.reply(.failure(error))
                refused += 1
            }
        }

        if !batch.isEmpty {
            CrashPoint.commitBefore.reach()
            do {
                checkpointSpacing.logged(bytes: try directory.appendDurably(batch))
            } catch {
                failCommit(error, pending: pending, refused: refused)
                return
            }
            CrashPoint.commitAfter.reach()
        }
        let committed = batch.envelopes.count
        state = working
        seq = workingSeq
        shared.withLock { shared in
            shared.snapshot = StoreSnapshot(seq: workingSeq, state: working)
            shared.statistics.seq = workingSeq
            if committed > 0 {
                shared.statistics.commits += 1
                shared.statistics.actionsCommitted += UInt64(committed)
                shared.statistics.largestCommit = max(shared.statistics.largestCommit, committed)
            }
            shared.statistics.dispatchesRefused += UInt64(refused)
            shared.statistics.duplicates += UInt64(duplicates)
        }
        recordCheckpoints(batch.checkpoints)
        if committed > 0 {
            watchers.published(batch.envelopes)
        }
        for (request, result) in pending {
            request.reply(.success(result))
        }
        if !pending.isEmpty { CrashPoint.ackAfter.reach() }
        if checkpointSpacing.isDue(at: workingSeq) {
            requestCheckpoint(seq: workingSeq, state: working)
        }
    }

    /// Middleware, validation and reducers for one request, all or nothing: on a throw, `working`
    /// is as it was.
    private func reduce(
        _ request: DispatchRequest, into working: inout State, after latest: UInt64, time: Timestamp
    ) throws(StoreError) -> [ActionEnvelope] {
        if request.actions.count == 1 {
            // No copy: reducers leave the state unchanged when they throw.
            return [try reduce(request.actions[0], of: request, into: &working, seq: latest + 1, time: time)]
        }
        // A batch is atomic: a later action's failure must undo the earlier ones, so work on a copy.
        var candidate = working
        var envelopes: [ActionEnvelope] = []
        envelopes.reserveCapacity(request.actions.count)
        for (offset, action) in request.actions.enumerated() {
            let actionSeq = latest + UInt64(offset) + 1
            envelopes.append(try reduce(action, of: request, into: &candidate, seq: actionSeq, time: time))
        }
        working = candidate
        return envelopes
    }

    private func reduce(
        _ action: Action, of request: DispatchRequest, into state: inout State, seq actionSeq: UInt64, time: Timestamp
    ) throws(StoreError) -> ActionEnvelope {
        let context = DispatchContext(seq: actionSeq, time: time, peer: request.peer)
        let processed: Action
        do {
            processed = try definition.runMiddleware(action, state: state, context: context)
            try definition.checkKnown(processed)
        } catch {
            throw StoreError(error)
        }
        let envelope = ActionEnvelope(
            seq: actionSeq, action: processed, time: time, peer: request.peer, idempotencyKey: request.idempotencyKey
        )
        try Fold(definition: definition).apply(envelope, to: &state, stateAt: revertTarget)
        return envelope
    }

    /// The state `@revert` restores: committed history only (store actions run in a group of
    /// their own, so everything before them is committed).
    private func revertTarget(_ to: UInt64) throws(StoreError) -> State {
        guard to <= seq else {
            throw StoreError(.seqOutOfRange, "cannot revert to \(to): the latest committed seq is \(seq)")
        }
        return to == seq ? state : try timeline.state(at: to)
    }

    private func failCommit(_ error: StorageError, pending: [Pending], refused: Int) {
        logger.error("commit failed; \(pending.count) dispatches not acknowledged: \(error.message)")
        // Never carry on as if the data had reached the disk: the state stays at the last
        // successful commit, and if the log on disk does not end where we think, stop writing.
        let onDisk = try? directory.latestSeq()
        if onDisk != seq {
            poisoned = "the log could not be confirmed after a failed commit (\(error.message)); restart the store"
            logger.critical("\(poisoned!)", metadata: ["expected": "\(seq)", "found": "\(onDisk.map(String.init) ?? "unreadable")"])
        }
        shared.withLock { shared in
            shared.statistics.commitFailures += 1
            shared.statistics.dispatchesRefused += UInt64(refused)
        }
        let failure = StoreError(.storage, "not durable, not acknowledged: \(error.message)", underlying: error)
        for (request, _) in pending {
            request.reply(.failure(failure))
        }
    }

    /// Starts encoding a checkpoint on another thread; the writer stores it with a later commit.
    func requestCheckpoint(seq: UInt64, state: State) {
        checkpointSpacing.checkpointed(at: seq)
        checkpointEncoder.async { [self] in
            if let checkpoint = encodeCheckpoint(seq: seq, state: state) {
                CrashPoint.checkpointEncoded.reach()
                queue.submit(checkpoint: checkpoint)
            }
        }
    }

    func encodeCheckpoint(seq: UInt64, state: State) -> Checkpoint? {
        do {
            return Checkpoint(seq: seq, reducer: definition.identity, time: .now(), state: try state.jsonValue())
        } catch {
            logger.error("cannot checkpoint seq \(seq): the state does not convert to JSON: \(error.message)")
            return nil
        }
    }

    func recordCheckpoints(_ checkpoints: [Checkpoint]) {
        guard let newest = checkpoints.max(by: { $0.seq < $1.seq }) else { return }
        checkpointSpacing.encoded(stateBytes: newest.stateBytes.count)
        shared.withLock { shared in
            shared.statistics.checkpointsWritten += UInt64(checkpoints.count)
            shared.statistics.lastCheckpointSeq = max(shared.statistics.lastCheckpointSeq, newest.seq)
        }
    }
}
