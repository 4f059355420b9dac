import Foundation
import ReelCore
import ReelStorage

/// The write path with a shared log (`StoreOptions.sharedLog`, `reeld --shared-log`).
///
/// The shared log decides the order; the data directory is this node's full copy of it. A group is
/// evaluated against this node's latest state as usual, then appended to the shared log, which
/// takes it only if no other node appended first. Then it goes into the local copy (the journal's
/// one sync, as without a shared log) and is answered: an answer means the shared log has it and
/// this node's readers see it. On a conflict the node follows the log to its end and evaluates the
/// group again against the new state, so refusals and `expectedSeq` are decided at the place the
/// actions would take in the order.
///
/// Following (``followSharedLog()``) applies other nodes' entries in seq order through the same
/// commit and publication as local dispatches, so subscribers see every action, whoever took it.
extension Writer {
    /// How long a group keeps being evaluated again after losing the race to other nodes before
    /// its dispatches are refused as not acknowledged. A node that lost follows the log (a fetch
    /// and a local sync) before it tries again, so under heavy contention from several nodes it
    /// can lose dozens of times in a row (BENCHMARKS.md, "The shared log"): a count of tries would
    /// turn that latency into errors.
    static var sharedLogRetryBudget: Duration { .seconds(10) }
    /// Conflicts in a row after which a group is retried in an exclusive turn of this node
    /// (``SharedLog/beginExclusiveTurn()``), which it cannot lose.
    static var conflictsBeforeATurn: Int { 8 }
    /// Entries fetched per round while following.
    static var followPage: Int { 1_000 }
    /// Rounds of following between two groups of dispatches (a conflict follows to the end).
    static var followPagesPerStep: Int { 10 }

    func commitSharedGroup(_ requests: ArraySlice<DispatchRequest>, checkpoints: [Checkpoint], sharedLog: any SharedLog) {
        if sharedLogFollowWanted.exchange(false, ordering: .acquiringAndReleasing) || !sharedLogAgreed {
            // A bounded step, so a node far behind (restarted after a long while) keeps answering
            // while it catches up; the rest follows at the next wake-up, queued right away.
            if (try? followSharedLog(sharedLog, pages: Self.followPagesPerStep)) == false {
                sharedLogWoke(latest: nil)
            }
        }
        let deadline = ContinuousClock.now + Self.sharedLogRetryBudget
        var attempts = 0
        var conflicts = 0
        var inTurn = false
        defer { if inTurn { sharedLog.endExclusiveTurn() } }
        /// The last evaluation that was tried again, refused as it is if time runs out.
        var lastTried: GroupEvaluation?
        while ContinuousClock.now < deadline || attempts == 0 {
            attempts += 1
            let group = evaluate(requests, checkpoints: checkpoints)
            if group.batch.envelopes.isEmpty {
                // Nothing to append. A refusal was decided against this node's latest state: valid
                // only if that is the log's latest too (an `expectedSeq` taken from another node
                // may be ahead of this one).
                if group.refusesSome, sharedLogAgreed, ContinuousClock.now < deadline, let latest = try? sharedLog.latestSeq(),
                    latest > seq
                {
                    noteSharedLogLatest(latest)
                    if (try? followSharedLog(sharedLog)) != nil, seq >= latest {
                        lastTried = group
                        continue
                    }
                }
                group.sendAnswers()
                commitAndPublish(group)  // checkpoints, statistics
                return
            }
            if let refusal = sharedLogRefusal {
                refuseGroup(group, because: refusal)
                return
            }
            guard sharedLogAgreed else {
                // Never append before this node's copy is known to agree with the log.
                let reason = shared.withLock { $0.statistics.sharedLog?.lastError } ?? "not reached yet"
                refuseGroup(group, because: "the shared log is unreachable (\(reason)); not acknowledged")
                return
            }
            let appendStarted = ContinuousClock.now
            let outcome: SharedLogAppendOutcome
            do throws(SharedLogError) {
                outcome = try sharedLog.append(Self.sharedLogEntries(of: group.batch))
            } catch {
                noteSharedLogFailure(error)
                refuseGroup(group, because: "the shared log did not take the actions: \(error.message); "
                    + "not acknowledged (if it took them after all, they appear in the history; an idempotencyKey makes a retry safe)")
                return
            }
            if outcome == .conflict {
                // Another node was first: this node's evaluation is stale. Back to the published
                // state, follow the log to its end, and evaluate the whole group again.
                state = shared.withLock { $0.snapshot.state }
                shared.withLock { $0.statistics.sharedLogConflicts += 1 }
                conflicts += 1
                do throws(SharedLogError) {
                    if conflicts >= Self.conflictsBeforeATurn && !inTurn {
                        // Busier nodes keep winning: follow and append again where none of
                        // them can append in between.
                        try sharedLog.beginExclusiveTurn()
                        inTurn = true
                    }
                    try followSharedLog(sharedLog)
                } catch {
                    refuseGroup(group, because: "another node appended first and the shared log could not be followed: \(error.message); not acknowledged")
                    return
                }
                lastTried = group
                continue
            }
            if inTurn {
                // Others may append again at once: this node's own commit does not need the turn.
                sharedLog.endExclusiveTurn()
                inTurn = false
            }
            sharedLogAppendedThrough.store(group.workingSeq, ordering: .releasing)
            noteSharedLogReachable(latest: group.workingSeq)
            let appendDuration = ContinuousClock.now - appendStarted
            shared.withLock { $0.statistics.sharedLog?.lastAppendMicros = Int(appendDuration.nanoseconds / 1_000) }
            group.sendAnswers()
            commitAndPublish(group, appendedToSharedLog: true)
            return
        }
        // Not evaluated again only to be refused: middleware and reducers ran enough times.
        let group = lastTried ?? evaluate(requests, checkpoints: checkpoints)
        refuseGroup(group, because: "other nodes kept appending first (\(attempts) tries in \(Self.sharedLogRetryBudget)); not acknowledged, try again")
    }

    /// Answers every request of an evaluated group that was not made durable: refusals and
    /// duplicates as evaluated, accepted ones with a storage error; the writer's copy goes back to
    /// the published state.
    private func refuseGroup(_ group: GroupEvaluation, because reason: String) {
        if !group.pending.isEmpty {
            logger.warning("\(group.pending.count) dispatches not acknowledged: \(reason)")
        }
        state = shared.withLock { $0.snapshot.state }
        group.sendAnswers()
        let failure = StoreError(.storage, reason)
        group.answerPending(failure: failure)
        shared.withLock { shared in
            shared.statistics.commitFailures += 1
            shared.statistics.dispatchesRefused += UInt64(group.refused)
        }
        instruments.commitFailures.increment()
        if !group.batch.checkpoints.isEmpty {
            // Checkpoints of committed seqs: still worth storing (a long outage would otherwise
            // drop every one encoded meanwhile).
            commitAndPublish(GroupEvaluation(batch: CommitBatch(checkpoints: group.batch.checkpoints), workingSeq: seq, inFlight: inFlight))
        }
    }

    /// The shared log's entries for a batch: the records the local log stores, the idempotency
    /// key claimed by the first action of the dispatch that used it.
    static func sharedLogEntries(of batch: CommitBatch) -> [SharedLogEntry] {
        var claims: [UInt64: String] = [:]
        for (key, record) in batch.dedup { claims[record.firstSeq] = key }
        return batch.envelopes.map { envelope in
            SharedLogEntry(
                seq: envelope.seq, record: EnvelopeCodec.encode(envelope), type: envelope.action.type,
                claimedKey: claims[envelope.seq]
            )
        }
    }

    /// Applies the entries of the shared log after this node's latest seq, in order, through the
    /// same commit and publication as local dispatches, `pages` rounds at most. Checks first, once,
    /// that this node's copy agrees with the log. Returns whether it reached the log's end.
    @discardableResult
    func followSharedLog(_ sharedLog: any SharedLog, pages: Int = .max) throws(SharedLogError) -> Bool {
        guard sharedLogRefusal == nil, poisoned == nil else { return true }
        do throws(SharedLogError) {
            if !sharedLogAgreed {
                try checkAgreement(with: sharedLog)
                sharedLogAgreed = true
            }
            for _ in 0..<pages {
                let entries = try sharedLog.entries(after: seq, limit: Self.followPage)
                guard !entries.isEmpty else {
                    noteSharedLogReachable(latest: seq)
                    return true
                }
                try apply(entries)
                noteSharedLogReachable(latest: seq)
                if entries.count < Self.followPage { return true }
            }
            return false
        } catch {
            noteSharedLogFailure(error)
            throw error
        }
    }

    /// Folds entries taken by other nodes into the state and commits them locally, in runs that
    /// end before each store action (`@revert` reads committed history).
    private func apply(_ entries: [SharedLogEntry]) throws(SharedLogError) {
        var group = followedGroup()
        for entry in entries {
            guard entry.seq == group.workingSeq + 1 else {
                throw disagree("the shared log gave seq \(entry.seq) after \(group.workingSeq)")
            }
            let envelope: ActionEnvelope
            do {
                envelope = try entry.record.withUnsafeBytes { bytes throws(StorageError) in
                    try EnvelopeCodec.decode(seq: entry.seq, from: bytes)
                }
            } catch {
                throw disagree("entry \(entry.seq) of the shared log is damaged: \((error as? StorageError)?.message ?? "\(error)")")
            }
            if envelope.action.isReserved, !group.batch.envelopes.isEmpty {
                commitFollowed(group)
                guard seq == group.workingSeq else { throw localCopyFailed() }
                group = followedGroup()
            }
            do throws(StoreError) {
                try fold(envelope, recordingInto: &group.batch.changes)
            } catch {
                // As at replay: an action this node's reducers refuse is logged all the same (the
                // history is the log's) and leaves the state as it was.
                logger.warning("action \(entry.seq) from the shared log is refused by this node's reducers and left out of the state: \(error.message)")
            }
            group.batch.envelopes.append(envelope)
            group.batch.changes?.endAction(seq: entry.seq)
            if let key = entry.claimedKey {
                group.batch.dedup.append((key, DedupRecord(firstSeq: entry.seq, count: 1)))
            } else if let key = envelope.idempotencyKey, let last = group.batch.dedup.last, last.key == key,
                last.record.firstSeq + last.record.count == entry.seq
            {
                // A later action of the same keyed batch.
                group.batch.dedup[group.batch.dedup.count - 1].record = DedupRecord(firstSeq: last.record.firstSeq, count: last.record.count + 1)
            }
            group.workingSeq = entry.seq
            if envelope.action.isReserved {
                commitFollowed(group)
                guard seq == group.workingSeq else { throw localCopyFailed() }
                group = followedGroup()
            }
        }
        if !group.batch.envelopes.isEmpty {
            commitFollowed(group)
            guard seq == group.workingSeq else { throw localCopyFailed() }
        }
    }

    /// An empty group of followed actions (recording what they change when the writer records
    /// the change index).
    private func followedGroup() -> GroupEvaluation {
        var group = GroupEvaluation(batch: CommitBatch(), workingSeq: seq, inFlight: inFlight)
        if recordsChanges { group.batch.changes = ChangePostings() }
        return group
    }

    private func commitFollowed(_ group: GroupEvaluation) {
        commitAndPublish(group)
        shared.withLock { $0.statistics.sharedLogFollowed += UInt64(group.batch.envelopes.count) }
    }

    /// The data directory refused followed entries (the commit's failure is logged): they are
    /// fetched again at the next wake-up.
    private func localCopyFailed() -> SharedLogError {
        SharedLogError(.unavailable, "this node's data directory could not store the entries (see the error above); following again later")
    }

    /// Whether this node's copy is a prefix of the shared log: same reducer, not longer, and the
    /// same record at its latest seq (each record is sealed with a checksum seeded by its seq, so
    /// equal bytes are the same action at the same place). An empty shared log is seeded with
    /// this node's history, so an existing store can become the first node of a cluster.
    private func checkAgreement(with sharedLog: any SharedLog) throws(SharedLogError) {
        // A history made from a bundle lacks the seqs before its origin: it cannot seed a shared
        // log, nor be a copy of one.
        let origin = directory.metadata.origin
        guard origin == 0 else {
            throw disagree("this data directory was made from a bundle (its history starts after seq \(origin)): it cannot join a shared log")
        }
        let recorded = try sharedLog.prepare(reducer: definition.identity)
        guard recorded.name == definition.identity.name else {
            throw disagree("the shared log at \(sharedLog.location) belongs to a store with the reducer '\(recorded.name)', not '\(definition.identity.name)'")
        }
        if recorded.version != definition.identity.version {
            logger.warning("the shared log was created with reducer version \(recorded.version), this node runs \(definition.identity.version): nodes with other versions fold the same history into other states")
        }
        var latest = try sharedLog.latestSeq()
        noteSharedLogLatest(latest)
        if latest == 0 && seq > 0 {
            try seed(sharedLog)
            latest = try sharedLog.latestSeq()
        }
        guard seq <= latest else {
            throw disagree("this node's copy has actions up to seq \(seq) but the shared log at \(sharedLog.location) ends at \(latest)")
        }
        guard seq > 0 else { return }
        guard let theirs = try sharedLog.entries(after: seq - 1, limit: 1).first, theirs.seq == seq else {
            throw disagree("the shared log has no entry at seq \(seq)")
        }
        let ours: ActionEnvelope?
        do {
            ours = try directory.envelope(at: seq)
        } catch {
            throw SharedLogError(.unavailable, "cannot read this node's action \(seq): \(error.message)")
        }
        guard let ours, EnvelopeCodec.encode(ours) == theirs.record else {
            throw disagree("this node's action at seq \(seq) differs from the shared log's")
        }
    }

    /// Copies this node's whole log into an empty shared log, in order, a page per append.
    private func seed(_ sharedLog: any SharedLog) throws(SharedLogError) {
        logger.notice("the shared log at \(sharedLog.location) is empty: seeding it with this node's \(seq) actions")
        var next: UInt64 = 1
        while next <= seq {
            var batch = CommitBatch()
            do {
                try directory.forEachEnvelope(from: next, through: min(seq, next + UInt64(Self.followPage) - 1)) { envelope in
                    batch.envelopes.append(envelope)
                    return true
                }
            } catch {
                throw SharedLogError(.unavailable, "cannot read this node's log to seed the shared log: \(error)")
            }
            for envelope in batch.envelopes {
                if let key = envelope.idempotencyKey, let record = try? directory.dedupRecord(forKey: key), record.firstSeq == envelope.seq {
                    batch.dedup.append((key, record))
                }
            }
            guard try sharedLog.append(Self.sharedLogEntries(of: batch)) == .appended else {
                throw disagree("another node appended to the shared log while this node seeded it with its own history")
            }
            next += UInt64(batch.envelopes.count)
        }
    }

    /// Records that this node must not serve the shared log's store (its copy disagrees with the
    /// log): dispatches are refused with the reason from now on.
    private func disagree(_ reason: String) -> SharedLogError {
        let message = "this node's copy disagrees with the shared log: \(reason); it refuses dispatches until that is resolved (docs/CLUSTER.md)"
        if sharedLogRefusal == nil {
            sharedLogRefusal = message
            logger.critical("\(message)")
            shared.withLock { $0.statistics.sharedLog?.refusal = message }
        }
        return SharedLogError(.incompatible, message)
    }

    func noteSharedLogLatest(_ latest: UInt64) {
        shared.withLock { Self.raiseSharedLogLatest(&$0, to: latest) }
    }

    private func noteSharedLogReachable(latest: UInt64) {
        shared.withLock { shared in
            shared.statistics.sharedLog?.reachable = true
            shared.statistics.sharedLog?.lastError = nil
            Self.raiseSharedLogLatest(&shared, to: latest)
        }
    }

    /// The latest seq known of the shared log only grows (reports may arrive out of order).
    private static func raiseSharedLogLatest(_ shared: inout Shared, to latest: UInt64) {
        if let known = shared.statistics.sharedLog?.latestSeq, known >= latest { return }
        shared.statistics.sharedLog?.latestSeq = latest
    }

    private func noteSharedLogFailure(_ error: SharedLogError) {
        // Whatever the log is once it answers again (a failover may have promoted a standby that
        // lacks the last commits), this node's copy is checked against it before the next append.
        sharedLogAgreed = false
        guard error.kind == .unavailable else { return }
        let first = shared.withLock { shared in
            defer {
                shared.statistics.sharedLog?.reachable = false
                shared.statistics.sharedLog?.lastError = error.message
            }
            return shared.statistics.sharedLog?.reachable != false
        }
        if first { logger.error("the shared log is unreachable: \(error.message); dispatches are refused (1010) and reads served from this node's copy until it is back") }
    }
}
