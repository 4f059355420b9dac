import Foundation
import ReelCore
import ReelCrashPoints
import Synchronization

/// One sync per acknowledgement: a group of dispatches is durable once its record is in the
/// journal and synced (``appendDurably(_:)``); LMDB receives the groups later, many per commit,
/// from a thread of its own, with its usual two syncs, off the acknowledgement path. LMDB is never
/// run unsynced: its copy-on-write pages are reused as soon as a synced meta page no longer
/// refers to them, so an unsynced LMDB can be corrupt after a power cut, not merely behind.
///
/// Until LMDB holds them, the acknowledged actions are served from memory (``AckedTail``), so
/// every reader sees each one once it is acknowledged and none before. Opening for writing first
/// moves whatever the journal holds past LMDB's last seq into LMDB; opening read-only (`reel
/// --data-dir` beside a running daemon) reads that part of the journal into the tail instead.
extension DataDirectory {
    /// The journal's file name in a data directory.
    public static let journalFileName = JournalFile.name

    /// Appends a group durably: when this returns, its actions are on disk and readers see them.
    /// When it throws, nothing of the group is durable and no reader sees it. For the store's
    /// writer thread, one caller at a time; a batch with only checkpoints goes straight to LMDB's
    /// queue.
    ///
    /// - Returns: the size of the group's action records as the log stores them, in bytes (what
    ///   replaying them costs, for checkpoint spacing).
    /// - Throws: ``StorageError`` `.full` when the disk (or the data file's maximum size) is
    ///   full, `.io` after an I/O error (then every later append fails until the directory is
    ///   reopened), `.invalidWrite` for a read-only handle.
    @discardableResult
    public func appendDurably(_ batch: CommitBatch) throws(StorageError) -> Int {
        guard let journal else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        guard !batch.envelopes.isEmpty else {
            if !batch.isEmpty { journal.enqueue(EncodedBatch(batch), keys: [], start: startApplier) }
            return 0
        }
        if let refusal = journal.refusal() { throw refusal }
        let first = batch.envelopes[0].seq
        // Does the group continue the tail (or, when it is empty, LMDB's log, which commits made
        // without the journal may have moved)? Only what that needs is read: a copy of the tail
        // would make the append below copy its array (it would no longer be the only reference).
        let (tailIsEmpty, tailLast) = tail.withLock { ($0.groups.isEmpty, $0.lastSeq) }
        guard tailIsEmpty ? first == (try latestSeq()) + 1 : first == tailLast + 1 else {
            throw StorageError(.invalidWrite, "cannot append seq \(first): the log ends at \(try latestSeq())")
        }
        let encoded = EncodedBatch(batch)
        try checkRoom(for: encoded, journal: journal)
        let group = JournalGroup(records: encoded.records, dedup: batch.dedup)
        let record = JournalFormat.encode(group)
        let file = journal.file
        if !file.fits(record.count) {
            if file.size < journal.cycleSize {
                try file.grow(toAtLeast: file.offset + record.count)
            } else {
                // Back to the start once LMDB holds everything the file has.
                try journal.drain()
                file.rewind()
                if !file.fits(record.count) { try file.grow(toAtLeast: record.count) }
            }
        }
        do {
            try file.append(record)
        } catch {
            if error.code != .full { journal.markFatal(error) }
            throw error
        }
        tail.withLock { $0.append(AckedTail.Group(envelopes: batch.envelopes)) }
        journal.enqueue(encoded, keys: batch.dedup, start: startApplier)
        return encoded.recordBytes
    }

    /// Calls `observer` (on the applier thread) each time moving acknowledged groups into LMDB
    /// fails. They stay in the journal, durable; appends are refused until a retry succeeds.
    public func observeJournalFailures(_ observer: @escaping @Sendable (StorageError) -> Void) {
        journal?.observeFailures(observer)
    }

    /// Calls `observer` (on the applier thread) after each LMDB commit of acknowledged groups,
    /// with how long it took (its writes and its two syncs).
    public func observeJournalCommits(_ observer: @escaping @Sendable (Duration) -> Void) {
        journal?.observeCommits(observer)
    }

    /// Bytes of acknowledged records the journal holds that LMDB does not have yet (waiting, or
    /// in the commit under way); 0 for a directory open read-only.
    public var journalBacklogBytes: Int { journal?.unappliedBytes ?? 0 }

    /// Why no append can succeed until the directory is opened again (a sync failed, so what the
    /// disk holds is unknown), or `nil` while appends can succeed.
    public var writeFailure: StorageError? { journal?.fatalFailure }

    /// Writes the journal's space with zeros up to `size` bytes, a few MiB at a time, beside the
    /// writer: for a daemon that opened with little of it preallocated, so as to serve sooner (a
    /// take-over), and preallocates the rest once it serves. Each step holds the journal's growth
    /// for a few milliseconds only.
    public func preallocateJournal(to size: Int) throws(StorageError) {
        guard let journal else { return }
        let step = 4 << 20
        while journal.file.size < size {
            let before = journal.file.size
            try journal.file.preallocate(min(size, before + step))
            // A disk too full for the zeros leaves the file to grow when it needs to.
            if journal.file.size == before { return }
        }
    }

    /// Moves everything into LMDB, stops the applier thread and gives the journal's space back
    /// (a stopped store costs what it holds); appending starts it again.
    /// - Throws: the failure that keeps LMDB from taking the rest, which stays in the journal
    ///   for the next open.
    public func closeJournal() throws(StorageError) {
        guard let journal else { return }
        do {
            try journal.drain()
        } catch {
            journal.stop()
            throw error
        }
        journal.stop()
        try journal.file.release()
    }

    /// Refuses a group that the data file could not take within its maximum size, counting what
    /// still waits for LMDB: an acknowledged action must always fit. Conservative: LMDB needs
    /// pages for a commit's copies of branch pages too, and cannot reuse free pages at once.
    private func checkRoom(for batch: EncodedBatch, journal: Journal) throws(StorageError) {
        let info = env.info
        let used = (info.lastPageNumber + 1) * Self.pageSize
        let room = env.options.maxMapSize - used
        let needed = 2 * (journal.unappliedBytes + batch.byteCount) + (256 << 10)
        guard needed > room else { return }
        throw StorageError(
            .full,
            "storage is full: the data file would pass its maximum size of \(env.options.maxMapSize >> 20) MiB (raise --max-map-size)"
        )
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Starts the applier: a thread that holds the directory only while it commits, so that a
    /// directory nobody else holds goes away (and its `deinit` moves the rest into LMDB).
    private func startApplier() {
        guard let journal else { return }
        Thread.startNamed("reel-applier") { [weak self] in
            while let batch = journal.nextBatch() {
                guard let directory = self else {
                    journal.applied(batch, failure: StorageError(.io, "the data directory was closed"))
                    return
                }
                directory.apply(batch, journal: journal)
            }
        }
    }

    private func apply(_ batch: EncodedBatch, journal: Journal) {
        let started = ContinuousClock.now
        do {
            try commit(batch)
        } catch {
            journal.applied(batch, failure: error)
            return
        }
        let took = ContinuousClock.now - started
        // Only now: a reader's snapshot of the tail must never skip what LMDB does not yet hold.
        if let last = batch.lastSeq {
            let forgotten = tail.withLock { $0.trim(through: last) }
            _ = consume forgotten  // released here, after the lock
        }
        journal.applied(batch, failure: nil, took: took)
        journal.file.growAhead(limit: journal.cycleSize)
    }

    /// At a read-write open: moves the journal's acknowledged groups past LMDB's last seq into
    /// LMDB, in one durable commit, so that everything above starts from a complete log.
    ///
    /// - Returns: the journal, ready to write from its start, and how many actions it moved.
    static func replayJournal(
        path: String, options: Options, latest: UInt64, commit: (EncodedBatch) throws(StorageError) -> Void
    ) throws(StorageError) -> (Journal, Int) {
        let file = try JournalFile(directory: path, durable: options.durable)
        let bytes = try JournalFile.contents(ofDirectory: path) ?? []
        let groups = try JournalFormat.unappliedGroups(in: bytes, after: latest, path: file.path)
        var batch = EncodedBatch()
        for group in groups {
            _ = try decodedEnvelopes(of: group)
            batch.records.append(contentsOf: group.records)
            batch.append(dedup: group.dedup)
        }
        if !batch.isEmpty { try commit(batch) }
        try file.preallocate(max(JournalFile.initialSize, options.journalPreallocation))
        if file.size < JournalFile.initialSize { try file.grow(toAtLeast: JournalFile.initialSize) }
        let journal = Journal(
            file: file, applyDelay: .milliseconds(Int64(options.journalApplyDelay * 1000)), cycleSize: options.journalCycleSize
        )
        return (journal, batch.records.count)
    }

    /// At a read-only open: the journal's acknowledged groups past LMDB's last seq, as a tail.
    /// A daemon may be writing the journal meanwhile: a read that races with it (a record
    /// half-written, or the file reused from its start after LMDB moved on) is read again.
    static func loadTail(path: String, latest: () throws(StorageError) -> UInt64) throws(StorageError) -> AckedTail {
        var attempt = 0
        while true {
            attempt += 1
            do throws(StorageError) {
                // A log LMDB cannot read is reported by every reader and by the scan; the tail
                // cannot be placed after it, so it stays empty.
                guard let applied = try? latest() else { return AckedTail(applied: 0) }
                guard let bytes = try JournalFile.contents(ofDirectory: path) else { return AckedTail(applied: applied) }
                let groups = try JournalFormat.unappliedGroups(in: bytes, after: applied, path: path + "/" + JournalFile.name)
                var tail = AckedTail(applied: applied)
                for group in groups { tail.append(AckedTail.Group(envelopes: try decodedEnvelopes(of: group))) }
                return tail
            } catch where error.code == .corrupt && attempt < 5 {
                usleep(20_000)
            }
        }
    }

    private static func decodedEnvelopes(of group: JournalGroup) throws(StorageError) -> [ActionEnvelope] {
        do {
            return try group.records.envelopes()
        } catch {
            throw StorageError(.corrupt, "the journal is damaged: \(error.message)")
        }
    }
}
