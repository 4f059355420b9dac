import Foundation
import ReelCore
import ReelJSON
@testable import ReelStorage
import ReelTestSupport
import Testing

/// Checksums on every stored record: damage is an error naming what is damaged, never data.
@Suite(.heavy) struct IntegrityTests {
    func envelope(_ seq: UInt64, key: String? = nil) -> ActionEnvelope { numberedEnvelope(seq, key: key) }

    /// A directory holding actions 1...count, keys on every fifth, checkpoints at 10 and 20.
    func filled(_ path: String, count: UInt64 = 24) throws {
        let data = try DataDirectory(path: path, reducerName: "test")
        let identity = ReducerIdentity(name: "test", version: "1")
        let time = Timestamp(nanosecondsSince1970: 0)
        try data.commit(CommitBatch(
            envelopes: (1...count).map { envelope($0, key: $0 % 5 == 0 ? "key-\($0)" : nil) },
            dedup: stride(from: 5, through: count, by: 5).map { ("key-\($0)", DedupRecord(firstSeq: $0, count: 1)) },
            checkpoints: [10, 20].map { Checkpoint(seq: $0, reducer: identity, time: time, state: ["at": .int(Int64($0))]) }
        ))
    }

    @Test func everyBitOfAnActionRecordIsCovered() throws {
        let bytes = EnvelopeCodec.encode(envelope(7, key: "k"))
        for bit in 0..<(bytes.count * 8) {
            var damaged = bytes
            damaged[bit / 8] ^= 1 << (bit % 8)
            let decoded = damaged.withUnsafeBytes { bytes in
                Result { () throws(StorageError) in try EnvelopeCodec.decode(seq: 7, from: bytes) }
            }
            switch decoded {
            case .success:
                Issue.record("bit \(bit) flipped and the record still decoded")
            case .failure(let error):
                #expect(error.code == .corrupt)
                #expect(error.message.hasPrefix("action 7 is damaged"))
            }
        }
    }

    @Test func aRecordIsBoundToItsSeq() throws {
        let bytes = EnvelopeCodec.encode(envelope(7))
        #expect(throws: StorageError.self) { try bytes.withUnsafeBytes { try EnvelopeCodec.decode(seq: 8, from: $0) } }
        let checkpoint = CheckpointCodec.encode(Checkpoint(
            seq: 10, reducer: ReducerIdentity(name: "t", version: "1"), time: Timestamp(nanosecondsSince1970: 0), state: ["a": 1]
        ))
        #expect(throws: StorageError.self) { try checkpoint.withUnsafeBytes { try CheckpointCodec.decode(seq: 11, from: $0) } }
        let dedup = DedupRecord(firstSeq: 3, count: 2).encoded(forKey: "mine")
        #expect(throws: StorageError.self) { try dedup.withUnsafeBytes { try DedupRecord(decoding: $0, key: "yours") } }
        #expect(try dedup.withUnsafeBytes { try DedupRecord(decoding: $0, key: "mine") } == DedupRecord(firstSeq: 3, count: 2))
    }

    @Test func aDamagedActionOnDiskFailsEveryReadThatReachesItAndNamesIt() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path)
        try damageStoredRecord(in: dir.path, database: "log", key: seqKey(6), bit: 30)
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        #expect(try data.latestSeq() == 24)
        #expect(try data.envelope(at: 5) == envelope(5, key: "key-5"))
        do {
            _ = try data.envelope(at: 6)
            Issue.record("read a damaged action")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("action 6 is damaged"))
        }
        var delivered: [UInt64] = []
        #expect(throws: StorageError.self) {
            try data.forEachEnvelope(from: 1) { delivered.append($0.seq); return true }
        }
        #expect(delivered == [1, 2, 3, 4, 5])
    }

    @Test func theScanReportsEveryDamagedRecordAndCarriesOn() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path)
        try damageStoredRecord(in: dir.path, database: "log", key: seqKey(6), bit: 9)
        try damageStoredRecord(in: dir.path, database: "log", key: seqKey(17), bit: -1)
        try damageStoredRecord(in: dir.path, database: "checkpoints", key: seqKey(20), bit: 100)
        try damageStoredRecord(in: dir.path, database: "dedup", key: Array("key-15".utf8), bit: 12)
        let report = try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true)).scanIntegrity()
        #expect(report.actions == 24)
        #expect(report.checkpoints == 2)
        #expect(report.idempotencyKeys == 4)
        #expect(report.damage.map(\.kind) == [.action, .action, .checkpoint, .idempotencyKey])
        #expect(report.damage.map(\.seq) == [6, 17, 20, nil])
        #expect(report.damage.last?.key == "key-15")
        #expect(report.logIsDamaged)
    }

    @Test func aLostActionIsFoundByTheReadersAndTheScan() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path)
        try removeStoredRecord(in: dir.path, database: "log", key: seqKey(9))
        let data = try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true))
        do {
            _ = try data.latestSeq()
            Issue.record("a log with a hole gave a latest seq")
        } catch {
            #expect(error.code == .corrupt)
        }
        #expect(throws: StorageError.self) { try data.forEachEnvelope(from: 8) { _ in true } }
        let report = try data.scanIntegrity()
        #expect(report.damage.contains { $0.kind == .log && $0.seq == 9 })
    }

    @Test func aLostFirstActionIsNoticed() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path, count: 3)
        try removeStoredRecord(in: dir.path, database: "log", key: seqKey(1))
        try removeStoredRecord(in: dir.path, database: "log", key: seqKey(2))
        try removeStoredRecord(in: dir.path, database: "log", key: seqKey(3))
        let empty = try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true))
        #expect(try empty.latestSeq() == 0)  // nothing left at all is an empty log, not damage
        let other = try TemporaryDirectory()
        try filled(other.path, count: 3)
        try removeStoredRecord(in: other.path, database: "log", key: seqKey(1))
        #expect(throws: StorageError.self) {
            try DataDirectory(path: other.path, reducerName: nil, options: .init(readOnly: true)).latestSeq()
        }
    }

    @Test func aDamagedIdempotencyRecordIsAnErrorNotAnAnswer() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path)
        try damageStoredRecord(in: dir.path, database: "dedup", key: Array("key-10".utf8), bit: 3)
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        #expect(try data.dedupRecord(forKey: "key-5") == DedupRecord(firstSeq: 5, count: 1))
        do {
            _ = try data.dedupRecord(forKey: "key-10")
            Issue.record("answered from a damaged idempotency record")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("key-10"))
        }
    }

    @Test func damagedMetadataIsRefusedAtOpen() throws {
        let dir = try TemporaryDirectory()
        try filled(dir.path)
        try damageStoredRecord(in: dir.path, database: "meta", key: Array("reducer".utf8), bit: 0)
        do {
            _ = try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true))
            Issue.record("opened a directory with damaged metadata")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("metadata"))
        }
    }
}
