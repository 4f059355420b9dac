import ReelCore
import ReelLMDB

/// A checkpoint passed over while looking for one to restore, and why.
public struct SkippedCheckpoint: Sendable {
    public var seq: UInt64
    public var reason: String
    /// Whether it was passed over because it is damaged (rather than made by another reducer):
    /// the store rebuilds such a checkpoint.
    public var isDamaged: Bool = false
}

extension DataDirectory {
    /// The newest intact checkpoint at or before `seq` made by `reducer` (name and version).
    ///
    /// Checkpoints of other reducer versions are not trusted, and damaged ones (hash mismatch) are
    /// never loaded: both are passed over and reported in `skipped`, so the caller can say so. The
    /// returned checkpoint's hash has been checked.
    ///
    /// In a directory whose history starts after a seq (``Metadata/origin``), the checkpoint there
    /// is that history's first state, whatever reducer wrote it: it is returned when no newer one
    /// is, and its damage is an error (no replay can stand in for it).
    public func newestCheckpoint(
        atOrBefore seq: UInt64, reducer: ReducerIdentity
    ) throws(StorageError) -> (checkpoint: Checkpoint?, skipped: [SkippedCheckpoint]) {
        do {
            return try env.read { txn in
                var skipped: [SkippedCheckpoint] = []
                var found: Checkpoint?
                let origin = metadata.origin
                try txn.forEach(in: checkpoints, from: seq, reverse: true) { key, value in
                    let key = try Self.decodeSeq(key, checkpoints)
                    let checkpoint: Checkpoint
                    switch Result(catching: { () throws(StorageError) in try decodeCheckpoint(key, value, headerOnly: false) }) {
                    case .success(let decoded) where origin > 0 && key == origin:
                        guard decoded.isIntact else { throw Self.damagedOrigin(key, "its contents do not match its hash") }
                        found = decoded
                        return false
                    case .failure(let error) where origin > 0 && key == origin:
                        throw Self.damagedOrigin(key, error.message)
                    case .success(let decoded):
                        checkpoint = decoded
                    case .failure(let error) where error.code == .corrupt:
                        skipped.append(SkippedCheckpoint(seq: key, reason: error.message, isDamaged: true))
                        return true
                    case .failure(let error):
                        throw error
                    }
                    guard checkpoint.reducer == reducer else {
                        skipped.append(SkippedCheckpoint(
                            seq: key, reason: "made by reducer \(checkpoint.reducer), not \(reducer)"
                        ))
                        return true
                    }
                    // The checksum, checked as it was decoded, guards against damage on disk; the
                    // state hash also against a checkpoint written wrong (and it is all a format-1
                    // record has).
                    guard checkpoint.isIntact else {
                        skipped.append(SkippedCheckpoint(seq: key, reason: "its contents do not match its hash", isDamaged: true))
                        return true
                    }
                    found = checkpoint
                    return false
                }
                if found == nil, origin > 0, seq >= origin {
                    throw StorageError(.corrupt, "the state this history starts from (seq \(origin)) is missing from \(path)")
                }
                return (found, skipped)
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoints")
        }
    }

    /// The seq of the newest checkpoint of `reducer` at or before `seq`, from the records' headers
    /// alone: its state is neither read nor checked (``newestCheckpoint(atOrBefore:reducer:)``
    /// does both), so a caller can tell how far it would replay before it loads one.
    public func newestCheckpointSeq(atOrBefore seq: UInt64, reducer: ReducerIdentity) throws(StorageError) -> UInt64? {
        do {
            return try env.read { txn in
                var found: UInt64?
                try txn.forEach(in: checkpoints, from: seq, reverse: true) { key, value in
                    let key = try Self.decodeSeq(key, checkpoints)
                    guard case .success(let header) = Result(catching: { () throws(StorageError) in try decodeCheckpoint(key, value, headerOnly: true) }),
                        header.reducer == reducer || (metadata.origin > 0 && key == metadata.origin)
                    else { return true }
                    found = key
                    return false
                }
                return found
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoints")
        }
    }

    /// The seqs of `reducer`'s checkpoints in `first…last`, oldest first, from the records'
    /// headers alone (a damaged one is found out when it is loaded).
    public func checkpointSeqs(from first: UInt64, through last: UInt64, reducer: ReducerIdentity) throws(StorageError) -> [UInt64] {
        do {
            return try env.read { txn in
                var seqs: [UInt64] = []
                try txn.forEach(in: checkpoints, from: first) { key, value in
                    let key = try Self.decodeSeq(key, checkpoints)
                    guard key <= last else { return false }
                    if case .success(let header) = Result(catching: { () throws(StorageError) in try decodeCheckpoint(key, value, headerOnly: true) }),
                        header.reducer == reducer
                    {
                        seqs.append(key)
                    }
                    return true
                }
                return seqs
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoints")
        }
    }

    private static func damagedOrigin(_ seq: UInt64, _ reason: String) -> StorageError {
        StorageError(.corrupt, "the state this history starts from (the checkpoint at seq \(seq)) is damaged: \(reason); import the bundle again")
    }

    /// Every intact checkpoint's header (seq, reducer, time, hash; no state bytes), oldest first.
    ///
    /// - Parameter damaged: called with each damaged checkpoint, which is left out.
    public func checkpointHeaders(damaged: (SkippedCheckpoint) -> Void = { _ in }) throws(StorageError) -> [Checkpoint] {
        do {
            return try env.read { txn in
                var headers: [Checkpoint] = []
                try txn.forEach(in: checkpoints) { key, value in
                    let seq = try Self.decodeSeq(key, checkpoints)
                    switch Result(catching: { () throws(StorageError) in try decodeCheckpoint(seq, value, headerOnly: true) }) {
                    case .success(let header):
                        headers.append(header)
                    case .failure(let error) where error.code == .corrupt:
                        damaged(SkippedCheckpoint(seq: seq, reason: error.message, isDamaged: true))
                    case .failure(let error):
                        throw error
                    }
                    return true
                }
                return headers
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoints")
        }
    }

    /// The checkpoint stored at exactly `seq`, or `nil`.
    public func checkpoint(at seq: UInt64) throws(StorageError) -> Checkpoint? {
        do {
            return try env.read { txn in
                try txn.withValue(forKey: seq, in: checkpoints) { try decodeCheckpoint(seq, $0, headerOnly: false) }
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoint \(seq)")
        }
    }

    private func decodeCheckpoint(_ seq: UInt64, _ value: RawSpan, headerOnly: Bool) throws(StorageError) -> Checkpoint {
        try value.withUnsafeBytes { bytes throws(StorageError) in
            try CheckpointCodec.decode(seq: seq, from: bytes, headerOnly: headerOnly, acceptingLegacy: acceptsLegacyRecords)
        }
    }
}
