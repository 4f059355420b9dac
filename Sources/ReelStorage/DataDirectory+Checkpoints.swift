import ReelCore
import ReelLMDB

/// A checkpoint passed over while looking for one to restore, and why.
public struct SkippedCheckpoint: Sendable {
    public var seq: UInt64
    public var reason: String
}

extension DataDirectory {
    /// The newest intact checkpoint at or before `seq` made by `reducer` (name and version).
    ///
    /// Checkpoints of other reducer versions are not trusted, and damaged ones (hash mismatch) are
    /// never loaded: both are passed over and reported in `skipped`, so the caller can say so. The
    /// returned checkpoint's hash has been checked.
    public func newestCheckpoint(
        atOrBefore seq: UInt64, reducer: ReducerIdentity
    ) throws(StorageError) -> (checkpoint: Checkpoint?, skipped: [SkippedCheckpoint]) {
        do {
            return try env.read { txn in
                var skipped: [SkippedCheckpoint] = []
                var found: Checkpoint?
                try txn.forEach(in: checkpoints, from: seq, reverse: true) { key, value in
                    let key = try Self.decodeSeq(key, checkpoints)
                    let header = try Self.decodeCheckpoint(key, value, headerOnly: true)
                    guard header.reducer == reducer else {
                        skipped.append(SkippedCheckpoint(
                            seq: key, reason: "made by reducer \(header.reducer), not \(reducer)"
                        ))
                        return true
                    }
                    let checkpoint = try Self.decodeCheckpoint(key, value, headerOnly: false)
                    guard checkpoint.isIntact else {
                        skipped.append(SkippedCheckpoint(seq: key, reason: "its contents do not match its hash"))
                        return true
                    }
                    found = checkpoint
                    return false
                }
                return (found, skipped)
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoints")
        }
    }

    /// Every checkpoint's header (seq, reducer, time, hash; no state bytes), oldest first.
    public func checkpointHeaders() throws(StorageError) -> [Checkpoint] {
        do {
            return try env.read { txn in
                var headers: [Checkpoint] = []
                try txn.forEach(in: checkpoints) { key, value in
                    headers.append(try Self.decodeCheckpoint(try Self.decodeSeq(key, checkpoints), value, headerOnly: true))
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
                try txn.withValue(forKey: seq, in: checkpoints) { try Self.decodeCheckpoint(seq, $0, headerOnly: false) }
            }
        } catch {
            throw Self.wrap(error, "cannot read checkpoint \(seq)")
        }
    }

    private static func decodeCheckpoint(_ seq: UInt64, _ value: RawSpan, headerOnly: Bool) throws(StorageError) -> Checkpoint {
        try value.withUnsafeBytes { bytes throws(StorageError) in
            try CheckpointCodec.decode(seq: seq, from: bytes, headerOnly: headerOnly)
        }
    }
}
