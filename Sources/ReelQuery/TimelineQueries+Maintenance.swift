import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore

// The maintenance methods (`checkpoints`, `verify`, `scan`, `backup`) and the figures of the data
// directory: additions to protocol 1's first methods that let `reel` inspect and copy a store, live through
// the daemon (whatever user it runs as) or offline.
extension TimelineQueries {
    /// `checkpoints`: every checkpoint beside the log, and the reducer this store folds with.
    public func checkpoints() throws(StoreError) -> CheckpointList {
        let headers = try storage { () throws(StorageError) in try timeline.directory.checkpointHeaders() }
        return CheckpointList(
            checkpoints: headers.map { CheckpointInfo(seq: $0.seq, reducer: $0.reducer, time: $0.time, hash: $0.hashHex) },
            reducer: timeline.definition.identity
        )
    }

    /// `verify`: replays `from...through` (the latest when `nil`) and compares it with the
    /// checkpoints in that range.
    public func verify(_ params: VerifyParams) throws(StoreError) -> VerifyOutcome {
        let through = try seq(params.through)
        let report = try timeline.verify(from: params.from, through: through)
        return VerifyOutcome(
            from: params.from, through: through, matched: report.matched,
            skipped: report.skipped.map { SeqReason(seq: $0.seq, reason: $0.reason) },
            refused: report.refused.map { SeqReason(seq: $0.seq, reason: $0.reason) },
            mismatch: report.mismatch.map {
                .init(seq: $0.seq, reason: $0.reason, patch: $0.patch, checkpointHash: $0.checkpointHash, replayedHash: $0.replayedHash)
            }
        )
    }

    /// `scan`: checks every stored record's checksum and lists every damaged one.
    public func scan() throws(StoreError) -> ScanOutcome {
        let report = try storage { () throws(StorageError) in try timeline.directory.scanIntegrity() }
        return ScanOutcome(
            actions: report.actions, checkpoints: report.checkpoints, idempotencyKeys: report.idempotencyKeys,
            damaged: report.damage.map { .init(what: $0.kind.rawValue, seq: $0.seq, key: $0.key, reason: $0.reason) }
        )
    }

    /// `backup`: a consistent, compact, owner-only copy of the data directory at `params.path`.
    ///
    /// - Throws: `.invalidArgument` when the destination is in the way (the caller's to fix),
    ///   `.storage` when the copy fails.
    public func backup(_ params: BackupParams) throws(StoreError) -> BackupOutcome {
        do {
            let report = try timeline.directory.backup(to: params.path)
            return BackupOutcome(path: report.path, seq: report.seq, bytes: report.bytes)
        } catch {
            let code: StoreError.Code = error.code == .invalidWrite ? .invalidArgument : .storage
            throw StoreError(code, error.message, underlying: error)
        }
    }

    /// The figures of the data directory itself: what `stats` says offline, and what the daemon's
    /// `stats` adds its counters to.
    public func stats() throws(StoreError) -> StatsResult {
        let directory = timeline.directory
        let checkpoints = try checkpoints().checkpoints
        var stats = StatsResult(seq: try latestSeq())
        stats.reducer = timeline.definition.identity.description
        stats.formatVersion = directory.metadata.formatVersion
        stats.created = directory.metadata.created
        if directory.metadata.origin > 0 { stats.origin = directory.metadata.origin }
        let usage = directory.mapUsage
        stats.mapSize = Int64(clamping: usage.mapSize)
        stats.mapUsed = Int64(clamping: usage.bytesUsed)
        stats.readerSlotsUsed = usage.readerSlotsUsed
        stats.maxReaders = usage.maxReaders
        stats.checkpoints = checkpoints.count
        stats.lastCheckpointSeq = checkpoints.last { $0.reducer == timeline.definition.identity }?.seq
        if (try? directory.changeIndexStatus()) != nil, let sizes = try? directory.logAndChangeIndexBytes() {
            stats.changeIndexThrough = timeline.indexedThrough()
            stats.changeIndexBytes = Int64(sizes.changeIndex)
        }
        return stats
    }

    private func storage<T>(_ body: () throws(StorageError) -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw StoreError(.storage, error.message, underlying: error)
        }
    }
}

extension StatsResult {
    /// Adds the counters of a running store to the figures of its data directory.
    public mutating func add(_ statistics: StoreStatistics) {
        seq = statistics.seq
        commits = statistics.commits
        actionsCommitted = statistics.actionsCommitted
        largestCommit = statistics.largestCommit
        dispatchesRefused = statistics.dispatchesRefused
        duplicates = statistics.duplicates
        commitFailures = statistics.commitFailures
        checkpointsWritten = statistics.checkpointsWritten
        lastCheckpointSeq = statistics.lastCheckpointSeq
        replayedAtOpen = statistics.replayedAtOpen
        restoredFromCheckpoint = statistics.restoredFromCheckpoint
        openSeconds = Double(statistics.openDuration.components.seconds)
            + Double(statistics.openDuration.components.attoseconds) / 1e18
        lastCheckpointTime = statistics.lastCheckpointTime
        commitMicros = Distribution(statistics.commitMicros)
        syncMicros = Distribution(statistics.syncMicros)
        actionsPerCommit = Distribution(statistics.actionsPerCommit)
        lmdbCommitMicros = Distribution(statistics.lmdbCommitMicros)
        journalBacklogBytes = Int64(statistics.journalBacklogBytes)
        sharedLog = statistics.sharedLog.map { status in
            SharedLogReport(
                status, localSeq: statistics.seq, conflicts: statistics.sharedLogConflicts, followed: statistics.sharedLogFollowed
            )
        }
    }
}

extension SharedLogReport {
    /// The report of a node's standing; the counters only for `stats`.
    public init(_ status: SharedLogStatus, localSeq: UInt64, conflicts: UInt64? = nil, followed: UInt64? = nil) {
        self.init(
            location: status.location, latestSeq: max(status.latestSeq, localSeq), lag: status.lag(localSeq: localSeq),
            reachable: status.reachable, error: status.lastError, refusal: status.refusal,
            conflicts: conflicts, followed: followed, lastAppendMicros: conflicts == nil ? nil : status.lastAppendMicros
        )
    }
}

extension StatsResult.Distribution {
    init(_ summary: DistributionSummary) {
        self.init(count: summary.count, p50: summary.p50, p90: summary.p90, p99: summary.p99, p999: summary.p999, max: summary.max)
    }
}
