import ReelLMDB

/// What ``DataDirectory/scanIntegrity(progress:)`` found.
public struct IntegrityReport: Sendable {
    /// One damaged thing, named so a person can find it.
    public struct Damage: Sendable, Equatable {
        /// What is damaged.
        public enum Kind: String, Sendable {
            /// A logged action: its record fails its checksum or does not decode.
            case action
            /// The log as a whole: missing or misplaced seqs, or a B-tree LMDB cannot walk.
            case log
            /// A checkpoint (the store skips it and rebuilds it).
            case checkpoint
            /// The record of an idempotency key.
            case idempotencyKey
            /// A list of the change index, or its status (derived from the log: the daemon
            /// rebuilds it when it next opens the store).
            case changeIndex
        }

        public var kind: Kind
        /// The seq of the action or checkpoint, where there is one.
        public var seq: UInt64?
        /// The idempotency key, for ``Kind/idempotencyKey``.
        public var key: String?
        public var reason: String

        public init(kind: Kind, seq: UInt64? = nil, key: String? = nil, reason: String) {
            self.kind = kind
            self.seq = seq
            self.key = key
            self.reason = reason
        }
    }

    /// Log records read (damaged ones included), and the acknowledged actions the journal still
    /// holds for LMDB (checked when they were appended).
    public var actions: UInt64 = 0
    public var checkpoints = 0
    public var idempotencyKeys = 0
    public var damage: [Damage] = []

    public init() {}

    /// Whether the log itself is damaged: then no replay can be trusted past the first damage.
    public var logIsDamaged: Bool { damage.contains { $0.kind == .action || $0.kind == .log } }
}

extension DataDirectory {
    /// Reads every record of the directory, checks each one's checksum and shape, and reports
    /// every damaged one, carrying on past damage (unlike the readers, which stop at the first).
    ///
    /// The log is also checked as a whole: seqs from 1 without a gap, in order, as many as LMDB
    /// counts. A B-tree that LMDB itself reports as damaged ends the walk of that database, with
    /// the last good seq in the reason.
    ///
    /// - Parameter progress: called with each log seq read.
    public func scanIntegrity(progress: (UInt64) -> Void = { _ in }) throws(StorageError) -> IntegrityReport {
        var report = IntegrityReport()
        var inLMDB: UInt64 = 0
        do {
            try env.read { txn in
                inLMDB = (try? txn.count(in: log)).map(UInt64.init) ?? 0
                scanLog(txn, into: &report, progress: progress)
                scanCheckpoints(txn, into: &report)
                scanIdempotencyKeys(txn, into: &report)
                for damage in changeIndexDamage(txn) { report.damage.append(damage) }
            }
        } catch {
            throw Self.wrap(error, "cannot scan \(path)")
        }
        // Acknowledged actions the journal holds until the applier moves them into LMDB (within
        // milliseconds): stored, and counted. Read after LMDB's view, so none falls in between.
        let acknowledged = tail.withLock { $0.lastSeq }
        if acknowledged > inLMDB { report.actions += acknowledged - inLMDB }
        return report
    }

    private func scanLog(_ txn: borrowing LMDBReadTransaction, into report: inout IntegrityReport, progress: (UInt64) -> Void) {
        // Seqs run origin+1...origin+entries without a gap (origin: 0 but in a directory made from a
        // bundle). Mark each key seen in that range; a key outside it is a garbled one, and keys
        // out of order are reported once, where the order first breaks.
        let entries: UInt64
        do {
            entries = UInt64(try txn.count(in: log))
        } catch {
            report.damage.append(.init(kind: .log, reason: "the log's size cannot be read: \(Self.wrap(error, "reading the log").message)"))
            return
        }
        let origin = metadata.origin
        var seen = SeqBitmap(count: entries)
        var previous = origin
        var reportedOrder = false
        do {
            try txn.forEach(in: log) { key, value in
                report.actions += 1
                guard let seq = log.decodeUInt64Key(key) else {
                    report.damage.append(.init(kind: .log, reason: "a key of \(key.byteCount) bytes after seq \(previous), where seqs take 8"))
                    return true
                }
                if seq <= previous, !reportedOrder {
                    report.damage.append(.init(kind: .log, seq: seq, reason: "seq \(seq) comes after seq \(previous): the index is out of order"))
                    reportedOrder = true
                }
                previous = seq
                if seq > origin && seq - origin <= entries {
                    seen.insert(seq - origin)
                } else {
                    report.damage.append(.init(
                        kind: .log, seq: seq, reason: "a key reads seq \(seq), outside the \(origin + 1)–\(origin + entries) that LMDB counts (a damaged key)"
                    ))
                }
                let checked = value.withUnsafeBytes { bytes in
                    Result { () throws(StorageError) in
                        try EnvelopeCodec.check(seq: seq, record: bytes, acceptingLegacy: acceptsLegacyRecords)
                    }
                }
                if case .failure(let error) = checked {
                    report.damage.append(.init(kind: .action, seq: seq, reason: error.message))
                }
                progress(seq)
                return true
            }
        } catch {
            report.damage.append(.init(
                kind: .log, seq: previous + 1,
                reason: "the log cannot be read past seq \(previous): \(Self.wrap(error, "walking the log").message)"
            ))
        }
        for missing in seen.missingRanges().map({ ($0.lowerBound + origin)...($0.upperBound + origin) }) {
            let what = missing.count == 1 ? "seq \(missing.lowerBound) is" : "seqs \(missing.lowerBound)–\(missing.upperBound) are"
            report.damage.append(.init(kind: .log, seq: missing.lowerBound, reason: "\(what) missing from the log"))
        }
    }

    private func scanCheckpoints(_ txn: borrowing LMDBReadTransaction, into report: inout IntegrityReport) {
        do {
            try txn.forEach(in: checkpoints) { key, value in
                report.checkpoints += 1
                guard let seq = checkpoints.decodeUInt64Key(key) else {
                    report.damage.append(.init(kind: .checkpoint, reason: "a key of \(key.byteCount) bytes, where seqs take 8"))
                    return true
                }
                let decoded = value.withUnsafeBytes { bytes in
                    Result { () throws(StorageError) in
                        try CheckpointCodec.decode(seq: seq, from: bytes, acceptingLegacy: acceptsLegacyRecords)
                    }
                }
                switch decoded {
                case .failure(let error):
                    report.damage.append(.init(kind: .checkpoint, seq: seq, reason: error.message))
                case .success(let checkpoint) where acceptsLegacyRecords && !checkpoint.isIntact:
                    report.damage.append(.init(kind: .checkpoint, seq: seq, reason: "checkpoint \(seq) does not match its hash"))
                case .success:
                    break
                }
                return true
            }
        } catch {
            report.damage.append(.init(kind: .checkpoint, reason: "the checkpoints cannot be read: \(Self.wrap(error, "walking the checkpoints").message)"))
        }
    }

    private func scanIdempotencyKeys(_ txn: borrowing LMDBReadTransaction, into report: inout IntegrityReport) {
        do {
            try txn.forEach(in: dedup) { key, value in
                report.idempotencyKeys += 1
                let name = String(decoding: key.withUnsafeBytes { Array($0) }, as: UTF8.self)
                let decoded = value.withUnsafeBytes { bytes in
                    Result { () throws(StorageError) in try DedupRecord(decoding: bytes, key: name, acceptingLegacy: acceptsLegacyRecords) }
                }
                if case .failure(let error) = decoded {
                    report.damage.append(.init(kind: .idempotencyKey, key: name, reason: error.message))
                }
                return true
            }
        } catch {
            report.damage.append(.init(kind: .idempotencyKey, reason: "the idempotency keys cannot be read: \(Self.wrap(error, "walking the keys").message)"))
        }
    }
}

extension DataDirectory {
    /// Every damaged record of the change index: a list whose chunk fails its checksum or does
    /// not decode, a key of no known shape, a damaged status.
    func changeIndexDamage(_ txn: borrowing some LMDBReadable & ~Copyable) -> [IntegrityReport.Damage] {
        guard let changes else { return [] }
        var damage: [IntegrityReport.Damage] = []
        do {
            try txn.forEach(in: changes) { key, value in
                let keyBytes = key.withUnsafeBytes { Array($0) }
                let problem = value.withUnsafeBytes { bytes -> StorageError? in
                    do throws(StorageError) {
                        if keyBytes == ChangeIndexKeys.statusKey {
                            _ = try ChangeIndexKeys.decodeStatus(bytes)
                            return nil
                        }
                        guard keyBytes.count >= 11, ChangeIndexKind(rawValue: keyBytes[0]) != nil,
                            3 + (Int(keyBytes[1]) << 8 | Int(keyBytes[2])) + 8 == keyBytes.count
                        else {
                            return StorageError(.corrupt, "the change index has a key of no known shape (\(keyBytes.count) bytes)")
                        }
                        let prefix = Array(keyBytes.dropLast(8))
                        _ = try ChangeIndexKeys.decode(bytes, key: keyBytes, first: ChangeIndexKeys.chunkSeq(keyBytes, prefix: prefix)!)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let problem {
                    damage.append(.init(kind: .changeIndex, key: ChangeIndexKeys.describe(keyBytes), reason: problem.message))
                }
                return true
            }
        } catch {
            damage.append(.init(kind: .changeIndex, reason: "the change index cannot be read: \(Self.wrap(error, "walking it").message)"))
        }
        return damage
    }

    /// ``changeIndexDamage(_:)`` in a read transaction of its own: what the store checks when it
    /// opens, before it trusts the index.
    public func changeIndexDamage() throws(StorageError) -> [IntegrityReport.Damage] {
        do {
            return try env.read { txn in changeIndexDamage(txn) }
        } catch {
            throw Self.wrap(error, "cannot read the change index")
        }
    }
}

/// One bit per seq of `1...count`: which seqs a walk of the log met (1.25 MB for 10 million).
struct SeqBitmap {
    private var words: [UInt64]
    let count: UInt64

    init(count: UInt64) {
        self.count = count
        words = Array(repeating: 0, count: Int((count + 63) / 64))
    }

    mutating func insert(_ seq: UInt64) {
        let index = seq - 1
        words[Int(index / 64)] |= 1 << (index % 64)
    }

    func contains(_ seq: UInt64) -> Bool {
        let index = seq - 1
        return words[Int(index / 64)] & (1 << (index % 64)) != 0
    }

    /// The ranges of `1...count` not inserted, at most `limit` of them.
    func missingRanges(limit: Int = 100) -> [ClosedRange<UInt64>] {
        var ranges: [ClosedRange<UInt64>] = []
        var seq: UInt64 = 1
        while seq <= count && ranges.count < limit {
            if words[Int((seq - 1) / 64)] == .max {  // a whole word present: skip it
                seq = (seq - 1) / 64 * 64 + 65
                continue
            }
            guard !contains(seq) else { seq += 1; continue }
            let start = seq
            while seq <= count && !contains(seq) { seq += 1 }
            ranges.append(start...(seq - 1))
        }
        return ranges
    }
}
