import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore

// The maintenance methods (`checkpoints`, `verify`, `backup`): additions to SPEC's methods that
// let `reel` inspect and copy a live store through the daemon, whatever user the daemon runs as.
extension MethodHandler {
    static func checkpoints(_ timeline: Timeline<State>) throws(StoreError) -> JSONValue {
        let headers: [Checkpoint]
        do {
            headers = try timeline.directory.checkpointHeaders()
        } catch {
            throw StoreError(.storage, error.message, underlying: error)
        }
        let list = headers.map { CheckpointInfo(seq: $0.seq, reducer: $0.reducer, time: $0.time, hash: $0.hashHex).jsonValue }
        return ["checkpoints": .array(list), "reducer": [
            "name": .string(timeline.definition.identity.name), "version": .string(timeline.definition.identity.version),
        ]]
    }

    static func verify(_ params: VerifyParams, timeline: Timeline<State>) throws(StoreError) -> JSONValue {
        let through: UInt64
        if let requested = params.through { through = requested } else { through = try timeline.latestSeq() }
        let report = try timeline.verify(from: params.from, through: through)
        return VerifyOutcome(report, from: params.from, through: through).jsonValue
    }

    static func scan(_ directory: DataDirectory) throws(StoreError) -> JSONValue {
        let report: IntegrityReport
        do {
            report = try directory.scanIntegrity()
        } catch {
            throw StoreError(.storage, error.message, underlying: error)
        }
        return ScanOutcome(
            actions: report.actions, checkpoints: report.checkpoints, idempotencyKeys: report.idempotencyKeys,
            damaged: report.damage.map { .init(what: $0.kind.rawValue, seq: $0.seq, key: $0.key, reason: $0.reason) }
        ).jsonValue
    }

    static func backup(_ params: BackupParams, directory: DataDirectory) throws(StoreError) -> JSONValue {
        do {
            let report = try directory.backup(to: params.path)
            return BackupOutcome(path: report.path, seq: report.seq, bytes: report.bytes).jsonValue
        } catch {
            // A destination in the way is the caller's to fix, not a storage failure of the store.
            let code: StoreError.Code = error.code == .invalidWrite ? .invalidArgument : .storage
            throw StoreError(code, error.message, underlying: error)
        }
    }
}

extension VerifyOutcome {
    /// The wire form of a verification report.
    public init(_ report: VerifyReport, from: UInt64, through: UInt64) {
        self.init(
            from: from, through: through, matched: report.matched,
            skipped: report.skipped.map { SeqReason(seq: $0.seq, reason: $0.reason) },
            refused: report.refused.map { SeqReason(seq: $0.seq, reason: $0.reason) },
            mismatch: report.mismatch.map {
                Mismatch(seq: $0.seq, reason: $0.reason, patch: $0.patch, checkpointHash: $0.checkpointHash, replayedHash: $0.replayedHash)
            }
        )
    }
}
