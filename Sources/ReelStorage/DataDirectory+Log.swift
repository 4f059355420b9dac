import Foundation
import ReelCore
import ReelJSON
import ReelCrashPoints
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

    /// Record version of the `dedup` database's values; version 1 (storage format 1) was the two
    /// varints alone, with no version byte and no checksum.
    static let recordVersion: UInt8 = 2

    /// Layout: record version (2) · `firstSeq` · `count` (varints) · checksum (``RecordChecksum``,
    /// seeded with the key).
    func encoded(forKey key: String) -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 24)
        writer.writeUInt8(Self.recordVersion)
        writer.writeVarint(firstSeq)
        writer.writeVarint(count)
        RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: key.utf8))  // in place: a copy would copy to append
        return writer.bytes
    }

    /// Decodes the record stored under `key`, after checking its checksum.
    /// - Throws: ``StorageError`` `.corrupt` when it is damaged.
    init(decoding bytes: UnsafeRawBufferPointer, key: String, acceptingLegacy: Bool = false) throws(StorageError) {
        let damaged = { (reason: String) in "the record of idempotency key '\(key)' is damaged: \(reason)" }
        do {
            if acceptingLegacy, bytes.first != Self.recordVersion || RecordChecksum.open(bytes, seed: RecordChecksum.seed(ofKey: key.utf8)) == nil {
                var reader = BinaryReader(bytes)
                self.init(firstSeq: try reader.readVarint(), count: try reader.readVarint())
                guard reader.isAtEnd else { throw StorageError(.corrupt, damaged("unexpected bytes")) }
            } else {
                let body = try RecordChecksum.checkedBody(
                    bytes, seed: RecordChecksum.seed(ofKey: key.utf8), version: Self.recordVersion, legacyVersion: nil, damaged: damaged
                )
                var reader = BinaryReader(body)
                _ = try reader.readUInt8()
                self.init(firstSeq: try reader.readVarint(), count: try reader.readVarint())
                guard reader.isAtEnd else { throw StorageError(.corrupt, damaged("unexpected bytes")) }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, damaged("\(error)"))
        }
        guard count >= 1, firstSeq >= 1 else { throw StorageError(.corrupt, damaged("it names no seq")) }
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
    /// What each of `envelopes` changed, for the change index, when whoever folded them recorded
    /// it (the store's writer, for a reducer that predicts its changes); otherwise the directory's
    /// change-index feed works it out when the actions reach LMDB.
    public var changes: ChangePostings?

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
        try commit(EncodedBatch(batch))
    }

    /// Like ``commit(_:)``, for records the caller encoded with ``EnvelopeCodec``
    /// (the importer, which weighs each record as it goes).
    ///
    /// - Parameter envelopes: The records' actions, when the caller has them decoded (one per
    ///   record, or none): the catalog of types reads them instead of the records' headers.
    package func commit(
        encodedRecords records: LogRecords, envelopes: [ActionEnvelope] = [], checkpoints: [Checkpoint]
    ) throws(StorageError) {
        guard !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        precondition(envelopes.isEmpty || envelopes.count == records.count, "one action per record, or none")
        var batch = EncodedBatch()
        batch.records = records
        batch.envelopes = envelopes
        batch.checkpoints = checkpoints
        guard !batch.isEmpty else { return }
        try commit(batch)
    }

    func commit(_ batch: EncodedBatch) throws(StorageError) {
        // The change index's entries are worked out before the transaction, whose body may run
        // again after the map grows, and written in it, with the actions they describe.
        let feed: (any ChangeIndexFeed)?
        let postings: ChangePostings?
        if let changes = batch.changes, !batch.records.isEmpty, changes.covers(batch.records) {
            (feed, postings) = (nil, changes)
        } else {
            feed = batch.records.isEmpty ? nil : changeFeed.withLock { $0 }
            postings = feed.flatMap { feed in Self.actions(of: batch).flatMap { feed.postings(for: $0) } }
        }
        let written: Bool
        do {
            written = try Self.commit(
                batch, env: env, databases: (log, dedup, checkpoints), origin: metadata.origin, types: types, changes: changes.flatMap { db in postings.map { (db, $0) } }
            )
        } catch {
            if postings != nil { feed?.postingsNotWritten() }
            throw error
        }
        if postings != nil, !written { feed?.postingsNotWritten() }
    }

    /// The actions of `batch`: as the writer had them, or decoded from the records (a batch the
    /// journal replayed at open, or the importer's); `nil` when a record does not decode.
    private static func actions(of batch: EncodedBatch) -> [ActionEnvelope]? {
        if batch.envelopes.count == batch.records.count { return batch.envelopes }
        return try? batch.records.envelopes()
    }

    /// - Returns: whether `changes`' postings were written (only when they continue the index).
    @discardableResult
    static func commit(
        _ batch: EncodedBatch, env: LMDBEnvironment, databases: (log: LMDBDatabase, dedup: LMDBDatabase, checkpoints: LMDBDatabase),
        origin: UInt64, types: TypeCatalog?, changes: (db: LMDBDatabase, postings: ChangePostings)? = nil
    ) throws(StorageError) -> Bool {
        let (log, dedup, checkpoints) = databases
        // Encoded before the transaction: its body may run again after the map grows.
        // The state a history starts from stays as it was made: nothing folds into it here.
        let checkpointRecords = batch.checkpoints.filter { origin == 0 || $0.seq > origin }.map { (seq: $0.seq, bytes: CheckpointCodec.encode($0)) }
        let newTypes = types?.additions(in: batch) ?? [:]
        do {
            let written = try env.write { txn in
                if let first = batch.records.firstSeq {
                    let latest = try Self.latestSeq(txn, log, origin: origin)
                    guard first == latest + 1 else {
                        throw StorageError(.invalidWrite, "cannot append seq \(first): the log ends at \(latest)")
                    }
                }
                try batch.records.forEach { seq, record in
                    try txn.put(record, forKey: seq, in: log, append: true)
                }
                for record in batch.dedup {
                    try txn.put(record.value, forKey: record.key, in: dedup)
                }
                for record in checkpointRecords {
                    try txn.put(record.bytes, forKey: record.seq, in: checkpoints, append: false)
                }
                if !batch.records.isEmpty { CrashPoint.commitInside.reach() }
                if !checkpointRecords.isEmpty { CrashPoint.checkpointCommit.reach() }
                if let types, !newTypes.isEmpty { try types.write(newTypes, in: txn) }
                guard let changes else { return false }
                return try ChangeIndexWriter.append(changes.postings, in: txn, db: changes.db)
            }
            types?.remember(newTypes)
            return written
        } catch {
            throw Self.wrap(error, "commit failed")
        }
    }

    /// Flushes every commit to the disk: for a directory opened with `durable: false` whose
    /// writing is done and which is to be kept (`reel import` writes a staging directory so and
    /// syncs it once, before moving it into place).
    ///
    /// - Throws: ``StorageError`` `.io` when the flush fails.
    public func sync() throws(StorageError) {
        do {
            try env.sync(force: true)
        } catch {
            throw Self.wrap(error, "cannot sync \(path)")
        }
    }

    /// Every (type, version) the log holds, with the first seq of each, sorted by type and version:
    /// from the directory's catalog, or read from the log in a directory no daemon has opened
    /// since catalogs exist (opened read-only). Actions the journal holds but LMDB does not yet
    /// (a running daemon's last milliseconds) are not counted.
    public func storedActionTypes() throws(StorageError) -> [StoredActionType] {
        if let types { return types.stored }
        do {
            return TypeCatalog.listed(try env.read { txn in try TypeCatalog.scan(log, in: txn) })
        } catch {
            throw Self.wrap(error, "cannot list the action types of the log")
        }
    }

    /// The latest seq LMDB's log holds: without the acknowledged actions the journal's applier has
    /// not moved there yet (``latestSeq()`` counts them).
    public func latestSeqInLMDB() throws(StorageError) -> UInt64 {
        do {
            return try env.read { txn in try Self.latestSeq(txn, log, origin: metadata.origin) }
        } catch {
            throw Self.wrap(error, "cannot read the log")
        }
    }

    /// The seq of the newest logged action; for an empty log, the seq the history starts after
    /// (``Metadata/origin``: 0 but in a directory made from a bundle).
    public func latestSeq() throws(StorageError) -> UInt64 {
        let acked = tail.withLock { $0 }  // before the transaction: see AckedTail
        do {
            return max(acked.lastSeq, try env.read { txn in try Self.latestSeq(txn, log, origin: metadata.origin) })
        } catch {
            throw Self.wrap(error, "cannot read the log")
        }
    }

    /// The last key of the log, checked against the number of entries LMDB counts and the first
    /// key: seqs run from `origin + 1` (1, but in a directory made from a bundle) without a gap,
    /// so they agree unless the file lost or garbled keys (a damaged page can make a B-tree walk
    /// silently end early, and its tail must not pass for the end of the log). Every reader asks
    /// this first, so a misshapen log is never served.
    static func latestSeq(_ txn: borrowing some LMDBReadable & ~Copyable, _ log: LMDBDatabase, origin: UInt64) throws -> UInt64 {
        var latest = origin
        try txn.forEach(in: log, reverse: true) { key, _ in
            latest = try decodeSeq(key, log)
            return false
        }
        let entries = UInt64(try txn.count(in: log))
        guard latest == origin + entries else {
            throw StorageError(
                .corrupt, "the log is damaged: its index counts \(entries) actions but its last seq is \(latest)"
                    + (origin == 0 ? "" : " (it starts after seq \(origin))")
            )
        }
        if entries > 0 {
            try txn.forEach(in: log) { key, _ in
                let first = try decodeSeq(key, log)
                guard first == origin + 1 else {
                    throw StorageError(.corrupt, "the log is damaged: it starts at seq \(first), not \(origin + 1)")
                }
                return false
            }
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
        if let acked = tail.withLock({ $0.envelope(at: seq) }) { return acked }
        do {
            return try env.read { txn in
                try txn.withValue(forKey: seq, in: log) { value in
                    try value.withUnsafeBytes { bytes throws(StorageError) in try EnvelopeCodec.decode(seq: seq, from: bytes, acceptingLegacy: acceptsLegacyRecords) }
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
        from first: UInt64, through last: UInt64 = .max, _ body: (consuming ActionEnvelope) throws -> Bool
    ) throws {
        let legacy = acceptsLegacyRecords
        try forEachRecord(from: first, through: last, tailAction: body) { seq, bytes in
            try body(try EnvelopeCodec.decode(seq: seq, from: bytes, acceptingLegacy: legacy))
        }
    }

    /// ``forEachEnvelope(from:through:_:)`` for a replay: `preparing` reads the stock actions of
    /// plain shapes straight into prepared actions (``PreparedStockAction``), for a replay whose
    /// reducer is the stock one (``StoreDefinition/applyPrepared``): `body` then gets the
    /// envelope with its payload `null` and the prepared action (``PreparedStockAction/filling(_:)``
    /// makes the envelope whole); any other action as its envelope and `nil`.
    ///
    /// The two apart rather than in one value: a value holding both was copied on its way through
    /// the walk and the read-ahead (a `memmove` of a few hundred bytes and a retain of each
    /// member), which slowed a replay of `merge`s, never prepared, by a fifth.
    public func forEachLoggedAction(
        from first: UInt64, through last: UInt64 = .max, preparing: Bool,
        _ body: (consuming ActionEnvelope, consuming PreparedStockAction?) throws -> Bool
    ) throws {
        let legacy = acceptsLegacyRecords
        try forEachRecord(from: first, through: last, tailAction: { try body($0, nil) }) { seq, bytes in
            var prepared: PreparedStockAction?
            let envelope = try EnvelopeCodec.decode(seq: seq, from: bytes, acceptingLegacy: legacy, preparing: preparing, into: &prepared)
            return try body(envelope, prepared)
        }
    }

    /// The walk of ``forEachEnvelope(from:through:_:)``: `record` gets each record's seq and
    /// bytes, inside the read transaction, to decode and hand on as its caller wants (each
    /// caller's decoding and body in one closure: through a generic walk, each decoded action was
    /// copied on its way, a tenth of a replay), and `tailAction` each action of the acknowledged
    /// tail.
    private func forEachRecord(
        from first: UInt64, through last: UInt64, tailAction: (consuming ActionEnvelope) throws -> Bool,
        _ record: (UInt64, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard first <= last else { return }
        let acked = tail.withLock { $0 }  // before the transaction: see AckedTail
        var expected = max(first, metadata.origin + 1)
        var stopped = false
        do {
            try env.read { txn in
                try txn.forEach(in: log, from: first) { key, value in
                    let seq = try Self.decodeSeq(key, log)
                    // Seqs have no gaps: until `last`, any other key is a lost or garbled one
                    // (checked before the end test, so a garbled key beyond `last` cannot end the
                    // walk early as if the log stopped there).
                    guard seq == expected || expected > last else {
                        throw StorageError(.corrupt, "the log is damaged: seq \(expected) is missing (the next key is \(seq))")
                    }
                    guard seq <= last else { return false }
                    expected += 1
                    stopped = try !value.withUnsafeBytes { bytes in try record(seq, bytes) }
                    return !stopped
                }
            }
        } catch let error as LMDBError {
            throw Self.wrap(error, "cannot read the log")
        }
        guard !stopped, expected <= last else { return }
        _ = try acked.forEach(from: expected, through: last, tailAction)
    }

    /// The seqs each of `keys` was given, for those that were used: the journal's under one lock,
    /// the rest from one read transaction. For the writer, once per group (a read transaction per
    /// keyed dispatch was 5% of its time at 50 x 16 pipelined).
    public func dedupRecords(forKeys keys: [String]) throws(StorageError) -> [String: DedupRecord] {
        var found = journal?.keys(keys) ?? [:]
        let rest = keys.filter { found[$0] == nil }
        guard !rest.isEmpty else { return found }
        do {
            try env.read { txn in
                for key in rest {
                    let record = try txn.withValue(forKey: Array(key.utf8), in: dedup) { value in
                        try value.withUnsafeBytes { bytes throws(StorageError) in try DedupRecord(decoding: bytes, key: key, acceptingLegacy: acceptsLegacyRecords) }
                    }
                    if let record { found[key] = record }
                }
            }
        } catch {
            throw Self.wrap(error, "cannot read idempotency keys")
        }
        return found
    }

    /// The seqs an idempotency key was given, or `nil` when it was never used.
    public func dedupRecord(forKey key: String) throws(StorageError) -> DedupRecord? {
        try dedupRecords(forKeys: [key])[key]
    }
}
