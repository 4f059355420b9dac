import ReelCore
import ReelJSON
import ReelStorage

/// The outcome of ``Timeline/verify(from:through:progress:)``.
public struct VerifyReport: Sendable {
    /// The range of seqs replayed: `from + 1 ... through` (empty when there was nothing to replay).
    public var replayed: ClosedRange<UInt64>?
    /// The checkpoints of this reducer that were compared with the replay and matched.
    public var matched: [UInt64] = []
    /// Checkpoints not compared, with the reason (made by another reducer or version).
    public var skipped: [(seq: UInt64, reason: String)] = []
    /// The first checkpoint that differs from the replay, if any; verification stops there.
    public var mismatch: VerifyMismatch?
    /// Logged actions the reducers refused during the replay: the log and the reducers disagree.
    public var refused: [(seq: UInt64, reason: String)] = []

    /// Whether everything that was compared agrees and every logged action replayed.
    public var isClean: Bool { mismatch == nil && refused.isEmpty }
}

/// A checkpoint that is not what replaying the log gives.
public struct VerifyMismatch: Sendable {
    /// The checkpoint's seq.
    public var seq: UInt64
    /// Why it differs: its stored bytes no longer match its own hash, or its state differs from
    /// the replayed one.
    public var reason: String
    /// The patch turning the checkpoint's state into the replayed state (empty when the checkpoint
    /// could not be decoded at all).
    public var patch: JSONPatch
    /// The checkpoint's recorded hash and the hash of the replayed state, as hex.
    public var checkpointHash: String
    public var replayedHash: String
}

extension Timeline {
    /// Replays the log and compares the result with every checkpoint of this reducer on the way.
    ///
    /// Verification runs in order and stops at the first difference. It can be split into
    /// segments: `from` is `0` (the initial state, trusting nothing) or the seq of a checkpoint
    /// that an earlier call verified, whose state is then the starting point. Chained this way,
    /// segments check exactly what one replay from the start checks, which lets a client verify a
    /// live store one request at a time and show progress.
    ///
    /// A `@revert` during the replay reads the state it restores through the checkpoints, all of
    /// which lie before it and so have already been verified.
    ///
    /// - Parameters:
    ///   - from: `0`, or the seq of a checkpoint of this reducer to start from.
    ///   - through: The last seq to replay; `nil` for the latest.
    ///   - progress: Called with each replayed seq (cheap; called from a tight loop).
    /// - Throws: ``StoreError`` `.seqOutOfRange` for a `through` beyond the latest seq,
    ///   `.invalidArgument` when `from` is not 0 or a usable checkpoint, `.storage` on read failures.
    @_specialize(where State == JSONValue)
    public func verify(
        from: UInt64 = 0, through: UInt64? = nil, progress: (UInt64) -> Void = { _ in }
    ) throws(StoreError) -> VerifyReport {
        let latest = try latestSeq()
        let last = through ?? latest
        guard last <= latest else {
            throw StoreError(.seqOutOfRange, "seq \(last) is beyond the latest seq \(latest)")
        }
        guard from <= last else {
            throw StoreError(.invalidArgument, "cannot verify from seq \(from) through the earlier seq \(last)")
        }
        // A history made from a bundle starts from the state it holds at its origin, trusted as
        // the initial state is.
        let from = max(from, directory.metadata.origin)
        var state = try startingState(from: from)
        var report = VerifyReport()
        var pending: [Checkpoint] = []
        do {
            for header in try directory.checkpointHeaders() where header.seq > from && header.seq <= last {
                if header.reducer == definition.identity {
                    pending.append(header)
                } else {
                    report.skipped.append((header.seq, "made by reducer \(header.reducer), not \(definition.identity)"))
                }
            }
        } catch {
            throw StoreError(error)
        }
        guard from < last else { return report }
        report.replayed = (from + 1)...last

        let fold = Fold(definition: definition)
        var nextCheckpoint = pending.startIndex
        var failure: StoreError?
        do {
            try directory.forEachLoggedActionReadingAhead(from: from + 1, through: last, preparing: fold.prepares) { envelope, prepared in
                let seq = envelope.seq
                do throws(StoreError) {
                    try fold.apply(envelope, prepared: prepared, to: &state) { (to: UInt64) throws(StoreError) -> State in try self.state(at: to) }
                } catch {
                    guard error.code == .rejected || error.code == .unknownActionType else { throw error }
                    report.refused.append((seq, error.message))
                }
                progress(seq)
                guard nextCheckpoint < pending.endIndex, pending[nextCheckpoint].seq == seq else { return true }
                do throws(StoreError) {
                    if let mismatch = try compare(state, with: pending[nextCheckpoint]) {
                        report.mismatch = mismatch
                        return false
                    }
                } catch {
                    failure = error
                    return false
                }
                report.matched.append(seq)
                nextCheckpoint += 1
                return true
            }
        } catch {
            throw StoreError.walking(error, "verification")
        }
        if let failure { throw failure }
        return report
    }

    /// The state a verification segment starts from: the initial state, or a checkpoint's.
    private func startingState(from seq: UInt64) throws(StoreError) -> State {
        guard seq > 0 else { return definition.initialState }
        if seq == directory.metadata.origin { return try origin().state }
        let checkpoint: Checkpoint?
        do {
            checkpoint = try directory.checkpoint(at: seq)
        } catch {
            throw StoreError(error)
        }
        guard let checkpoint, checkpoint.reducer == definition.identity else {
            throw StoreError(.invalidArgument, "there is no checkpoint of \(definition.identity) at seq \(seq) to verify from")
        }
        do {
            return try State(jsonValue: try checkpoint.state(checkingHash: true))
        } catch {
            throw StoreError(.invalidArgument, "the checkpoint at seq \(seq) cannot be a starting point: \(error)")
        }
    }

    /// Compares a replayed state with a checkpoint header; loads the checkpoint's state only when
    /// the hashes differ, to say how.
    private func compare(_ state: State, with header: Checkpoint) throws(StoreError) -> VerifyMismatch? {
        let replayed = try state.jsonValueOrThrow(seq: header.seq)
        let replayedHash = Checkpoint.hash(of: replayed.binaryEncoded())
        let stored: Checkpoint?
        do {
            stored = try directory.checkpoint(at: header.seq)
        } catch {
            throw StoreError(error)
        }
        guard let stored else {
            throw StoreError(.storage, "the checkpoint at seq \(header.seq) disappeared during verification")
        }
        let replayedHex = Checkpoint.hex(replayedHash)
        guard stored.isIntact else {
            return VerifyMismatch(
                seq: header.seq, reason: "the checkpoint's bytes do not match its own hash (damaged on disk)",
                patch: JSONPatch([]), checkpointHash: stored.hashHex, replayedHash: replayedHex
            )
        }
        if stored.hash == replayedHash { return nil }
        let checkpointState: JSONValue
        do {
            checkpointState = try stored.state(checkingHash: false)
        } catch {
            return VerifyMismatch(
                seq: header.seq, reason: "the checkpoint does not decode: \(error.message)",
                patch: JSONPatch([]), checkpointHash: stored.hashHex, replayedHash: replayedHex
            )
        }
        return VerifyMismatch(
            seq: header.seq, reason: "replaying the log gives another state than the checkpoint holds",
            patch: JSONPatch(from: checkpointState, to: replayed), checkpointHash: stored.hashHex, replayedHash: replayedHex
        )
    }
}
