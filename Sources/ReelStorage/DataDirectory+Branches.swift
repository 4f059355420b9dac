import ReelCore
import ReelJSON
import ReelLMDB

/// A branch of the history (`reel branch create NAME --at SEQ`): the main history's state at
/// `forkSeq`, then actions of its own, numbered on from there. Creating one writes this record
/// and nothing else: the main history is not copied.
public struct BranchRecord: Sendable, Hashable {
    public var name: String
    /// The key of its actions in the `branch-log` database.
    public var id: UInt64
    /// The seq of the main history the branch starts after.
    public var forkSeq: UInt64
    public var created: Timestamp

    public init(name: String, id: UInt64, forkSeq: UInt64, created: Timestamp) {
        (self.name, self.id, self.forkSeq, self.created) = (name, id, forkSeq, created)
    }

    /// Record version of the `branches` database's values.
    static let recordVersion: UInt8 = 1

    /// Layout: record version · id · fork seq · created (varints) · checksum seeded with the name.
    func encoded() -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 32)
        writer.writeUInt8(Self.recordVersion)
        writer.writeVarint(id)
        writer.writeVarint(forkSeq)
        writer.writeVarint(UInt64(bitPattern: created.nanosecondsSince1970))
        RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: name.utf8))
        return writer.bytes
    }

    init(decoding bytes: UnsafeRawBufferPointer, name: String) throws(StorageError) {
        let damaged = { (reason: String) in "the record of branch '\(name)' is damaged: \(reason)" }
        do {
            let body = try RecordChecksum.checkedBody(
                bytes, seed: RecordChecksum.seed(ofKey: name.utf8), version: Self.recordVersion, legacyVersion: nil, damaged: damaged
            )
            var reader = BinaryReader(body)
            _ = try reader.readUInt8()
            let id = try reader.readVarint(), fork = try reader.readVarint(), created = try reader.readVarint()
            guard reader.isAtEnd else { throw StorageError(.corrupt, damaged("unexpected bytes")) }
            self.init(name: name, id: id, forkSeq: fork, created: Timestamp(nanosecondsSince1970: Int64(bitPattern: created)))
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, damaged("\(error)"))
        }
    }

    /// The `branch-log` key of the branch's action at `seq`: its id, then the seq, big-endian, so
    /// that a branch's actions sort together and in order.
    static func key(id: UInt64, seq: UInt64) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            key[index] = UInt8(truncatingIfNeeded: id >> (56 - 8 * index))
            key[8 + index] = UInt8(truncatingIfNeeded: seq >> (56 - 8 * index))
        }
        return key
    }

    static func seq(ofKey key: RawSpan, id: UInt64) -> UInt64? {
        key.withUnsafeBytes { bytes -> UInt64? in
            guard bytes.count == 16 else { return nil }
            var keyID: UInt64 = 0, seq: UInt64 = 0
            for index in 0..<8 {
                keyID = keyID << 8 | UInt64(bytes[index])
                seq = seq << 8 | UInt64(bytes[8 + index])
            }
            return keyID == id ? seq : nil
        }
    }
}

/// A branch and where it stands.
public struct BranchInfo: Sendable, Equatable {
    public var record: BranchRecord
    /// The seq of its last action (its fork seq while it has none).
    public var latestSeq: UInt64
}

extension DataDirectory {
    private func branchDatabases() throws(StorageError) -> (branches: LMDBDatabase, log: LMDBDatabase) {
        guard let branchesDB, let branchLogDB else {
            throw StorageError(.notFound, "\(path) has no branches (no daemon with branches has opened it)")
        }
        return (branchesDB, branchLogDB)
    }

    /// Creates a branch of the main history at `seq` (at most the latest): one small record.
    ///
    /// - Throws: ``StorageError`` `.invalidWrite` when a branch of that name exists or the seq is
    ///   beyond the latest, `.io`/`.full` on failure.
    public func createBranch(_ name: String, at seq: UInt64) throws(StorageError) -> BranchRecord {
        guard !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        if let problem = BranchName.problem(name) { throw StorageError(.invalidWrite, problem) }
        let (branches, _) = try branchDatabases()
        let latest = try latestSeq()
        guard seq <= latest else { throw StorageError(.invalidWrite, "seq \(seq) is beyond the latest seq \(latest)") }
        guard seq >= metadata.origin else {
            throw StorageError(.invalidWrite, "seq \(seq) is before this history's start (seq \(metadata.origin))")
        }
        do {
            return try env.write { txn in
                guard try !txn.contains(Array(name.utf8), in: branches) else {
                    throw StorageError(.invalidWrite, "a branch named '\(name)' exists already")
                }
                var highest: UInt64 = 0
                try txn.forEach(in: branches) { key, value in
                    let other = String(decoding: key.withUnsafeBytes { Array($0) }, as: UTF8.self)
                    let record = try value.withUnsafeBytes { bytes throws(StorageError) in try BranchRecord(decoding: bytes, name: other) }
                    highest = max(highest, record.id)
                    return true
                }
                let record = BranchRecord(name: name, id: highest + 1, forkSeq: seq, created: .now())
                try txn.put(record.encoded(), forKey: Array(name.utf8), in: branches)
                return record
            }
        } catch {
            throw Self.wrap(error, "cannot create branch '\(name)'")
        }
    }

    /// Deletes a branch and its actions.
    public func deleteBranch(_ name: String) throws(StorageError) {
        guard !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        let (branches, log) = try branchDatabases()
        let record = try branch(named: name)
        do {
            try env.write { txn in
                var keys: [[UInt8]] = []
                try txn.forEach(in: log, from: BranchRecord.key(id: record.id, seq: 0)) { key, _ in
                    guard BranchRecord.seq(ofKey: key, id: record.id) != nil else { return false }
                    keys.append(key.withUnsafeBytes { Array($0) })
                    return true
                }
                for key in keys { _ = try txn.delete(key, in: log) }
                _ = try txn.delete(Array(name.utf8), in: branches)
            }
        } catch {
            throw Self.wrap(error, "cannot delete branch '\(name)'")
        }
    }

    /// The branch named `name`.
    /// - Throws: ``StorageError`` `.notFound` when there is none.
    public func branch(named name: String) throws(StorageError) -> BranchRecord {
        let (branches, _) = try branchDatabases()
        let found: BranchRecord?
        do {
            found = try env.read { txn in
                try txn.withValue(forKey: Array(name.utf8), in: branches) { value in
                    try value.withUnsafeBytes { bytes throws(StorageError) in try BranchRecord(decoding: bytes, name: name) }
                }
            }
        } catch {
            throw Self.wrap(error, "cannot read branch '\(name)'")
        }
        guard let found else { throw StorageError(.notFound, "no branch named '\(name)'") }
        return found
    }

    /// Every branch, by name, with its latest seq.
    public func branches() throws(StorageError) -> [BranchInfo] {
        guard let branchesDB, let branchLogDB else { return [] }
        do {
            return try env.read { txn in
                var records: [BranchRecord] = []
                try txn.forEach(in: branchesDB) { key, value in
                    let name = String(decoding: key.withUnsafeBytes { Array($0) }, as: UTF8.self)
                    records.append(try value.withUnsafeBytes { bytes throws(StorageError) in try BranchRecord(decoding: bytes, name: name) })
                    return true
                }
                return try records.map { record in
                    BranchInfo(record: record, latestSeq: try Self.latestBranchSeq(record, txn, branchLogDB) ?? record.forkSeq)
                }
            }
        } catch {
            throw Self.wrap(error, "cannot list the branches")
        }
    }

    /// The seq of a branch's last action, `nil` while it has none.
    public func latestSeq(of branch: BranchRecord) throws(StorageError) -> UInt64 {
        let (_, log) = try branchDatabases()
        do {
            return try env.read { txn in try Self.latestBranchSeq(branch, txn, log) } ?? branch.forkSeq
        } catch {
            throw Self.wrap(error, "cannot read branch '\(branch.name)'")
        }
    }

    private static func latestBranchSeq(_ branch: BranchRecord, _ txn: borrowing some LMDBReadable & ~Copyable, _ log: LMDBDatabase) throws -> UInt64? {
        var latest: UInt64?
        try txn.forEach(in: log, from: BranchRecord.key(id: branch.id, seq: .max), reverse: true) { key, _ in
            latest = BranchRecord.seq(ofKey: key, id: branch.id)
            return false
        }
        return latest
    }

    /// Appends actions to a branch durably (one LMDB commit): their seqs must continue it.
    public func appendToBranch(_ branch: BranchRecord, _ envelopes: [ActionEnvelope]) throws(StorageError) {
        guard !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        let (branches, log) = try branchDatabases()
        let records = envelopes.map { (key: BranchRecord.key(id: branch.id, seq: $0.seq), bytes: EnvelopeCodec.encode($0)) }
        do {
            try env.write { txn in
                guard try txn.contains(Array(branch.name.utf8), in: branches) else {
                    throw StorageError(.notFound, "no branch named '\(branch.name)' (deleted meanwhile)")
                }
                let latest = try Self.latestBranchSeq(branch, txn, log) ?? branch.forkSeq
                guard let first = envelopes.first?.seq, first == latest + 1 else {
                    throw StorageError(.invalidWrite, "cannot append seq \(envelopes.first?.seq ?? 0) to branch '\(branch.name)': it ends at \(latest)")
                }
                for record in records { try txn.put(record.bytes, forKey: record.key, in: log) }
            }
        } catch {
            throw Self.wrap(error, "cannot append to branch '\(branch.name)'")
        }
    }

    /// Calls `body` with each of the branch's actions from `first` through `last`, in order, in
    /// one read transaction, until it returns `false`.
    public func forEachBranchEnvelope(
        _ branch: BranchRecord, from first: UInt64, through last: UInt64, _ body: (ActionEnvelope) throws -> Bool
    ) throws(StorageError) {
        let (_, log) = try branchDatabases()
        let start = max(first, branch.forkSeq + 1)
        guard start <= last else { return }
        do {
            try env.read { txn in
                var expected = start
                try txn.forEach(in: log, from: BranchRecord.key(id: branch.id, seq: start)) { key, value in
                    guard let seq = BranchRecord.seq(ofKey: key, id: branch.id), seq <= last else { return false }
                    guard seq == expected else {
                        throw StorageError(.corrupt, "branch '\(branch.name)' is damaged: seq \(expected) is missing (the next key is \(seq))")
                    }
                    expected += 1
                    let envelope = try value.withUnsafeBytes { bytes throws(StorageError) in try EnvelopeCodec.decode(seq: seq, from: bytes) }
                    return try body(envelope)
                }
            }
        } catch {
            throw Self.wrap(error, "cannot read branch '\(branch.name)'")
        }
    }
}
