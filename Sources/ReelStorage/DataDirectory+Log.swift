import Foundation
import ReelCore
import ReelJSON
import ReelLMDB

/// The seqs an idempotency key was given: a single action has `count == 1`.
public struct DedupRecord: Sendable, Equatable {
    public var firstSeq: UInt64
    public var count: UInt64

    public init(firstSeq: UInt64, count: UInt64) {
        self.firstSeq = firstSeq
        self.count = count
    }

    public var seqs: ClosedRange<UInt64> { firstSeq...(firstSeq + count - 1) }

    var encoded: [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 12)
        writer.writeVarint(firstSeq)
        writer.writeVarint(count)
        return writer.bytes
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        var reader = BinaryReader(bytes)
        self.init(firstSeq: try reader.readVarint(), count: try reader.readVarint())
    }
}

/// Everything one group commit writes, in one LMDB transaction and one sync.
public struct CommitBatch: Sendable {
    /// Accepted actions, with seqs following the log's latest seq without a gap.
    public var envelopes: [ActionEnvelope] = []
    /// Idempotency keys first used by these envelopes.
    public var dedup: [(key: String, record: DedupRecord)] = []
    /// Checkpoints encoded off the write path since the last commit.
    public var checkpoints: [Checkpoint] = []

    public init(envelopes: [ActionEnvelope] = [], dedup: [(key: String, record: DedupRecord)] = [], checkpoints: [Checkpoint] = []) {
        self.envelopes = envelopes
        self.dedup = dedup
        self.checkpoints = checkpoints
    }

    public var isEmpty: Bool { envelopes.isEmpty && dedup.isEmpty && checkpoints.isEmpty }
}

extension DataDirectory {
    /// Writes a batch durably: when this returns, the batch is on disk (unless the directory was
    /// opened with `durable: false`). When it throws, nothing of the batch was committed.
    ///
    /// - Throws: ``StorageError`` `.invalidWrite` when the seqs do not continue the log, `.full`
    ///   when the disk or the maximum map size is full, `.io` for other failures.
    public func commit(_ batch: CommitBatch) throws(StorageError) {
        guard !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        guard !batch.isEmpty else { return }
        // Encode before the transaction: the body may run again after the map grows.
        let records = batch.envelopes.map { (seq: $0.seq, bytes: EnvelopeCodec.encode($0)) }
        let dedupRecords = batch.dedup.map { (key: Array($0.key.utf8), value: $0.record.encoded) }
        let checkpointRecords = batch.checkpoints.map { (seq: $0.seq, bytes: CheckpointCodec.encode($0)) }
        do {
            try env.write { txn in
                if let first = records.first {
                    let latest = try Self.latestSeq(txn, log)
                    guard first.seq == latest + 1 else {
                        throw StorageError(.invalidWrite, "cannot append seq \(first.seq): the log ends at \(latest)")
                    }
                }
                for record in records {
                    try txn.put(record.bytes, forKey: record.seq, in: log, append: true)
                }
                for record in dedupRecords {
                    try txn.put(record.value, forKey: record.key, in: dedup)
                }
                for record in checkpointRecords {
                    try txn.put(record.bytes, forKey: record.seq, in: checkpoints, append: false)
                }
            }
        } catch {
            throw Self.wrap(error, "commit failed")
        }
    }

    /// The seq of the newest logged action; 0 for an empty log.
    public func latestSeq() throws(StorageError) -> UInt64 {
        do {
            return try env.read { txn in try Self.latestSeq(txn, log) }
        } catch {
            throw Self.wrap(error, "cannot read the log")
        }
    }

    static func latestSeq(_ txn: borrowing some LMDBReadable & ~Copyable, _ log: LMDBDatabase) throws -> UInt64 {
        var latest: UInt64 = 0
        try txn.forEach(in: log, reverse: true) { key, _ in
            latest = try decodeSeq(key, log)
            return false
        }
        return latest
    }

    static func decodeSeq(_ key: RawSpan, _ db: LMDBDatabase) throws(StorageError) -> UInt64 {
        guard let seq = db.decodeUInt64Key(key) else {
            throw StorageError(.corrupt, "a key of \(key.byteCount) bytes in '\(db.name)', where seqs take 8")
        }
        return seq
    }

    /// The action logged at `seq`, or `nil` when there is none.
    public func envelope(at seq: UInt64) throws(StorageError) -> ActionEnvelope? {
        do {
            return try env.read { txn in
                try txn.withValue(forKey: seq, in: log) { value in
                    try value.withUnsafeBytes { bytes throws(StorageError) in try EnvelopeCodec.decode(seq: seq, from: bytes) }
                }
            }
        } catch {
            throw Self.wrap(error, "cannot read action \(seq)")
        }
    }

    /// Calls `body` with each logged action from `first` through `last` (inclusive, clamped to the
    /// log), in order, inside one read transaction, until `body` returns `false`.
    ///
    /// The read transaction pins a snapshot: actions committed meanwhile are not seen.
    public func forEachEnvelope(
        from first: UInt64, through last: UInt64 = .max, _ body: (ActionEnvelope) throws -> Bool
    ) throws {
        guard first <= last else { return }
        do {
            try env.read { txn in
                try txn.forEach(in: log, from: first) { key, value in
                    let seq = try Self.decodeSeq(key, log)
                    guard seq <= last else { return false }
                    let envelope = try value.withUnsafeBytes { bytes throws(StorageError) in
                        try EnvelopeCodec.decode(seq: seq, from: bytes)
                    }
                    return try body(envelope)
                }
            }
        } catch let error as LMDBError {
            throw Self.wrap(error, "cannot read the log")
        }
    }

    /// The seqs an idempotency key was given, or `nil` when it was never used.
    public func dedupRecord(forKey key: String) throws(StorageError) -> DedupRecord? {
        do {
            return try env.read { txn in
                try txn.withValue(forKey: Array(key.utf8), in: dedup) { value in
                    try value.withUnsafeBytes { try DedupRecord(decoding: $0) }
                }
            }
        } catch {
            throw Self.wrap(error, "cannot read idempotency keys")
        }
    }
}
