import ReelCore
import Foundation

/// The bytes one or more commits put into LMDB, encoded ahead of the transaction.
struct EncodedBatch: Sendable {
    var records = LogRecords()
    /// The actions of `records`, when whoever encoded them still had them decoded (the store's
    /// writer): the change index's feed folds these instead of decoding the records again.
    /// Either empty or one per record.
    var envelopes: [ActionEnvelope] = []
    /// What the records' actions changed, when the writer recorded it (``CommitBatch/changes``):
    /// `nil`, or covering every record.
    var changes: ChangePostings?
    var dedup: [(key: [UInt8], value: [UInt8])] = []
    /// Checkpoints, encoded by whoever commits (``DataDirectory/commit(_:env:databases:)``): a
    /// checkpoint's record copies and checksums the whole state, which stays off the
    /// acknowledgement path when the applier commits.
    var checkpoints: [Checkpoint] = []

    init() {}

    init(_ batch: CommitBatch) {
        records.append(contentsOf: batch.envelopes)
        envelopes = batch.envelopes
        changes = batch.changes
        append(dedup: batch.dedup)
        checkpoints = batch.checkpoints
    }

    /// Idempotency records, encoded as the `dedup` database holds them.
    mutating func append(dedup keys: [(key: String, record: DedupRecord)]) {
        dedup += keys.map { (key: Array($0.key.utf8), value: $0.record.encoded(forKey: $0.key)) }
    }

    var isEmpty: Bool { records.isEmpty && dedup.isEmpty && checkpoints.isEmpty }
    /// The size of the action records.
    var recordBytes: Int { records.byteCount }
    var lastSeq: UInt64? { records.lastSeq }
    var byteCount: Int {
        recordBytes + dedup.reduce(0) { $0 + $1.key.count + $1.value.count }
            + checkpoints.reduce(0) { $0 + $1.stateBytes.count }
    }

    /// The batches one after the other, as one: their records copied once into a buffer of their
    /// whole size.
    init(merging batches: [EncodedBatch]) {
        guard batches.count > 1 else {
            self = batches.first ?? EncodedBatch()
            return
        }
        records.reserveCapacity(
            bytes: batches.reduce(0) { $0 + $1.records.byteCount }, records: batches.reduce(0) { $0 + $1.records.count }
        )
        for batch in batches { append(batch) }
    }

    mutating func append(_ other: EncodedBatch) {
        if records.isEmpty {
            changes = other.changes
        } else if !other.records.isEmpty {
            if changes != nil, let theirs = other.changes { changes!.append(theirs) } else { changes = nil }
        }
        if envelopes.count == records.count, other.envelopes.count == other.records.count {
            envelopes += other.envelopes
        } else {
            envelopes.removeAll()
        }
        records.append(contentsOf: other.records)
        dedup += other.dedup
        checkpoints += other.checkpoints
    }
}

/// The write side of the journal: the state shared between the store's writer thread, which
/// appends groups (``DataDirectory/appendDurably(_:)``), and the applier thread, which moves
/// them into LMDB in commits of many groups, off the acknowledgement path.
final class Journal: @unchecked Sendable {
    // @unchecked: `file` is the writer thread's to append to (the applier only grows it, see
    // JournalFile); every other field is guarded by `condition`.
    let file: JournalFile
    private let condition = NSCondition()

    /// How long a group may wait for LMDB when few arrive (100 ms by default): longer means fewer
    /// LMDB commits (each costs two syncs that compete with the journal's for the disk) and a
    /// longer tail in memory.
    let applyDelay: Duration
    /// The file's size before writing goes back to its start.
    let cycleSize: Int
    /// Apply at once when this much waits, whatever the delay. Small on purpose: an LMDB commit
    /// writes a few times the bytes of its records (the log, the change index, the B-trees'
    /// pages), and the journal's next `fdatasync` waits behind those writes at the disk. Under a
    /// pipelined load a batch of 20 ms (about 2 MiB) held every acknowledgement up for 2–5 ms once
    /// per commit, most of the p99; commits of 128 KiB keep each wait short (50 × 16 p99 7.0–7.6
    /// → 4.3–4.7 ms; BENCHMARKS.md, "Latency"). A trickle (one client) never reaches it, and keeps
    /// one commit per `applyDelay`.
    static let applyBytes = 128 << 10
    /// After a failed LMDB commit (a full disk), the applier tries again after this long.
    static let retryDelay: Duration = .milliseconds(100)

    /// The groups (and checkpoints) waiting for LMDB, in order: merged into one batch by the
    /// applier, outside the lock (``nextBatch()``), not by the writer as it enqueues each.
    private var pending: [EncodedBatch] = []
    private var pendingBytes = 0
    /// Bytes of the batch the applier is committing now.
    private var applyingBytes = 0
    private var pendingKeys: [String] = []
    private var oldestPending: ContinuousClock.Instant?
    /// Keys of journaled groups until LMDB holds them, for the writer's idempotency checks.
    private var keys: [String: DedupRecord] = [:]
    /// The last LMDB commit's failure while it lasts (a full disk or map: retried).
    private var failure: StorageError?
    private var retryAt: ContinuousClock.Instant?
    /// A failure after which nothing more is written until the directory is reopened.
    private var fatal: StorageError?
    /// LMDB commits attempted so far (successful or not).
    private var attempts = 0
    /// Told of each failed LMDB commit (the store logs it), on the applier thread.
    private var failureObserver: (@Sendable (StorageError) -> Void)?
    /// Told how long each successful LMDB commit took (the store's figures), on the applier thread.
    private var commitObserver: (@Sendable (Duration) -> Void)?
    private var drainers = 0
    private var applierRunning = false
    private var stopping = false

    init(file: JournalFile, applyDelay: Duration, cycleSize: Int) {
        self.file = file
        self.applyDelay = applyDelay
        self.cycleSize = cycleSize
    }

    // MARK: writer side

    /// The failure a new append must be refused with, if any. While LMDB commits fail with a full
    /// disk, the applier tries again now and this waits for that attempt: once space is back, the
    /// first dispatch succeeds, as it would with LMDB alone.
    func refusal() -> StorageError? {
        condition.lock()
        defer { condition.unlock() }
        if let fatal { return fatal }
        guard failure != nil else { return nil }
        let attempt = attempts
        retryAt = .now
        condition.broadcast()
        while attempts == attempt, fatal == nil, applierRunning {
            condition.wait()
        }
        return fatal ?? failure
    }

    /// The failure that ended writing for good, if any (without waiting for a retry).
    var fatalFailure: StorageError? {
        condition.lock()
        defer { condition.unlock() }
        return fatal
    }

    func markFatal(_ error: StorageError) {
        condition.lock()
        fatal = fatal ?? error
        condition.broadcast()
        condition.unlock()
    }

    var unappliedBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return pendingBytes + applyingBytes
    }

    /// The records of those of `wanted` that the journal holds, under one lock.
    func keys(_ wanted: [String]) -> [String: DedupRecord] {
        condition.lock()
        defer { condition.unlock() }
        var found: [String: DedupRecord] = [:]
        for key in wanted { if let record = keys[key] { found[key] = record } }
        return found
    }

    /// Hands a journaled (or checkpoint-only) batch to the applier.
    func enqueue(_ batch: EncodedBatch, keys newKeys: [(key: String, record: DedupRecord)], start: () -> Void) {
        condition.lock()
        let wasEmpty = pending.isEmpty
        let wasBelow = pendingBytes < Self.applyBytes
        pending.append(batch)
        pendingBytes += batch.byteCount
        for (key, record) in newKeys {
            keys[key] = record
            pendingKeys.append(key)
        }
        if oldestPending == nil { oldestPending = .now }
        let needsThread = !applierRunning
        applierRunning = true
        stopping = false
        // The applier needs waking only to start its delay or to apply at once: with batches
        // already waiting, it sleeps until their delay is up (or is committing), and waking it
        // for each append would cost two context switches per group.
        if wasEmpty || (wasBelow && pendingBytes >= Self.applyBytes) { condition.broadcast() }
        condition.unlock()
        if needsThread { start() }
    }

    /// Waits until LMDB holds everything appended so far.
    /// - Throws: the applier's failure, when it cannot.
    func drain() throws(StorageError) {
        condition.lock()
        defer { condition.unlock() }
        drainers += 1
        defer { drainers -= 1 }
        retryAt = .now
        condition.broadcast()
        var attempts = 0
        while !pending.isEmpty {
            if let fatal { throw fatal }
            if let failure, attempts >= 2 { throw failure }
            if failure != nil { attempts += 1 }
            if !applierRunning { throw StorageError(.io, "the journal's applier is not running") }
            condition.wait()
        }
    }

    /// Stops the applier thread once LMDB holds everything (or its failure stops it).
    func stop() {
        condition.lock()
        guard applierRunning else {
            condition.unlock()
            return
        }
        stopping = true
        condition.broadcast()
        while applierRunning { condition.wait() }
        condition.unlock()
    }

    func observeFailures(_ observer: @escaping @Sendable (StorageError) -> Void) {
        condition.lock()
        failureObserver = observer
        condition.unlock()
    }

    func observeCommits(_ observer: @escaping @Sendable (Duration) -> Void) {
        condition.lock()
        commitObserver = observer
        condition.unlock()
    }

    /// Lets the applier end without waiting for it.
    func stopSoon() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    // MARK: applier side

    /// Blocks until a batch should go to LMDB; `nil` when the applier should end.
    func nextBatch() -> EncodedBatch? {
        nextBatches().map(EncodedBatch.init(merging:))
    }

    private func nextBatches() -> [EncodedBatch]? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if fatal != nil || (stopping && (pending.isEmpty || failure != nil)) {
                applierRunning = false
                condition.broadcast()
                return nil
            }
            let now = ContinuousClock.now
            if !pending.isEmpty {
                var due = oldestPending.map { $0 + applyDelay } ?? now
                if drainers > 0 || stopping || pendingBytes >= Self.applyBytes { due = now }
                if failure != nil, let retryAt { due = max(due, retryAt) }
                if due <= now {
                    let batch = pending
                    pending = []
                    applyingBytes = pendingBytes
                    pendingBytes = 0
                    return batch
                }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.seconds(due - now)))
            } else {
                condition.wait()
            }
        }
    }

    /// Records the outcome of committing `batch` (taken by ``nextBatch()``) to LMDB, and tells
    /// the observers: of a failure, or of how long a successful commit `took`.
    func applied(_ batch: EncodedBatch, failure error: StorageError?, took: Duration? = nil) {
        condition.lock()
        let observer = error == nil ? nil : failureObserver
        let timer = error == nil ? commitObserver : nil
        defer {
            condition.unlock()
            if let error { observer?(error) }
            if let took { timer?(took) }
        }
        applyingBytes = 0
        attempts += 1
        if let error {
            // Put it back in front of whatever came meanwhile, to be tried again.
            pending.insert(batch, at: 0)
            pendingBytes = pending.reduce(0) { $0 + $1.byteCount }
            failure = error
            retryAt = .now + Self.retryDelay
            if error.code != .full { fatal = fatal ?? error }
        } else {
            failure = nil
            retryAt = nil
            oldestPending = pending.isEmpty ? nil : .now
            let appliedKeys = pendingKeys.prefix(batch.dedup.count)
            for key in appliedKeys { keys[key] = nil }
            pendingKeys.removeFirst(appliedKeys.count)
        }
        condition.broadcast()
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
