import Foundation
import ReelCore
import ReelJSON
@testable import ReelStorage
import ReelTestSupport
import Testing

/// The action log, idempotency keys and checkpoints on real LMDB files.
@Suite(.heavy) struct DataDirectoryTests {
    func envelope(_ seq: UInt64, key: String? = nil) -> ActionEnvelope {
        ActionEnvelope(
            seq: seq, action: Action(type: "set", payload: ["path": "/n", "value": .int(Int64(seq)), "ü": [1.5, nil, true]]),
            time: Timestamp(nanosecondsSince1970: 1_700_000_000_123_456_789 + Int64(seq)),
            peer: Peer(uid: 1000, gid: 100, pid: 4242), idempotencyKey: key
        )
    }

    @Test func envelopesRoundTripThroughTheCodec() throws {
        for original in [envelope(1), envelope(2, key: "retry-me"), ActionEnvelope(
            seq: 9, action: Action(type: "x"), time: Timestamp(nanosecondsSince1970: -5), peer: .unknown
        )] {
            let bytes = EnvelopeCodec.encode(original)
            let decoded = try bytes.withUnsafeBytes { try EnvelopeCodec.decode(seq: original.seq, from: $0) }
            #expect(decoded == original)
        }
    }

    @Test func damagedRecordsAreReportedNotTrusted() {
        let bytes = EnvelopeCodec.encode(envelope(1))
        for cut in [0, 1, 5, bytes.count - 1] {
            #expect(throws: StorageError.self) {
                try Array(bytes.prefix(cut)).withUnsafeBytes { try EnvelopeCodec.decode(seq: 1, from: $0) }
            }
        }
        // A directory's records all have its format's version (older ones are upgraded at open),
        // so another version byte is damage, not a newer format.
        var future = bytes
        future[0] = 99
        do {
            _ = try future.withUnsafeBytes { try EnvelopeCodec.decode(seq: 1, from: $0) }
            Issue.record("decoded a record of an unknown version")
        } catch let error as StorageError {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("action 1"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func appendReadAndRange() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        #expect(try data.latestSeq() == 0)
        try data.commit(CommitBatch(envelopes: (1...3).map { envelope($0) }))
        try data.commit(CommitBatch(envelopes: [envelope(4, key: "k")], dedup: [("k", DedupRecord(firstSeq: 4, count: 1))]))
        #expect(try data.latestSeq() == 4)
        #expect(try data.envelope(at: 2) == envelope(2))
        #expect(try data.envelope(at: 5) == nil)
        var seen: [UInt64] = []
        try data.forEachEnvelope(from: 2, through: 3) { seen.append($0.seq); return true }
        #expect(seen == [2, 3])
        #expect(try data.dedupRecord(forKey: "k") == DedupRecord(firstSeq: 4, count: 1))
        #expect(try data.dedupRecord(forKey: "other") == nil)
    }

    @Test func aGapInSeqsIsRefusedAndWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        try data.commit(CommitBatch(envelopes: [envelope(1)]))
        do {
            try data.commit(CommitBatch(envelopes: [envelope(3)], dedup: [("k", DedupRecord(firstSeq: 3, count: 1))]))
            Issue.record("appended seq 3 after 1")
        } catch {
            #expect(error.code == .invalidWrite)
        }
        #expect(try data.latestSeq() == 1)
        #expect(try data.dedupRecord(forKey: "k") == nil)
    }

    @Test func checkpointsAreFoundByReducerAndVerifiedByHash() throws {
        let dir = try TemporaryDirectory()
        var data = try DataDirectory(path: dir.path, reducerName: "test")
        let v1 = ReducerIdentity(name: "test", version: "1")
        let v2 = ReducerIdentity(name: "test", version: "2")
        let time = Timestamp(nanosecondsSince1970: 0)
        try data.commit(CommitBatch(envelopes: (1...10).map { envelope($0) }, checkpoints: [
            Checkpoint(seq: 4, reducer: v1, time: time, state: ["at": 4]),
            Checkpoint(seq: 8, reducer: v2, time: time, state: ["at": 8]),
            Checkpoint(seq: 9, reducer: v1, time: time, state: ["at": 9]),
        ]))
        let found = try data.newestCheckpoint(atOrBefore: 10, reducer: v1)
        #expect(found.checkpoint?.seq == 9)
        #expect(try found.checkpoint?.state() == ["at": 9])
        #expect(try data.newestCheckpoint(atOrBefore: 8, reducer: v1).skipped.map(\.seq) == [8])
        #expect(try data.newestCheckpoint(atOrBefore: 3, reducer: v1).checkpoint == nil)
        #expect(try data.newestCheckpoint(atOrBefore: 10, reducer: v2).checkpoint?.seq == 8)
        #expect(try data.checkpointHeaders().map(\.seq) == [4, 8, 9])

        // One bit of checkpoint 9's state flipped on disk.
        data = try DataDirectory(path: dir.sub("elsewhere"), reducerName: "test")
        try damageStoredRecord(in: dir.path, database: "checkpoints", key: seqKey(9), bit: -70)
        data = try DataDirectory(path: dir.path, reducerName: "test")
        let afterDamage = try data.newestCheckpoint(atOrBefore: 10, reducer: v1)
        #expect(afterDamage.checkpoint?.seq == 4)
        #expect(afterDamage.skipped.map(\.seq) == [9, 8])
        #expect(afterDamage.skipped.first?.isDamaged == true)
        #expect(afterDamage.skipped.first?.reason.contains("checkpoint 9 is damaged") == true)
        var damaged: [UInt64] = []
        #expect(try data.checkpointHeaders { damaged.append($0.seq) }.map(\.seq) == [4, 8])
        #expect(damaged == [9])
    }

    @Test func metadataGuardsFormatAndReducer() throws {
        let dir = try TemporaryDirectory()
        do {
            let data = try DataDirectory(path: dir.path, reducerName: "todos")
            #expect(data.metadata.reducerName == "todos")
            #expect(data.metadata.formatVersion == DataDirectory.formatVersion)
        }
        do {
            _ = try DataDirectory(path: dir.path, reducerName: "rpg")
            Issue.record("opened a todos directory for rpg")
        } catch {
            #expect(error.code == .incompatible)
        }
        let readOnly = try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true))
        #expect(readOnly.metadata.reducerName == "todos")
        #expect(throws: StorageError.self) { try readOnly.commit(CommitBatch(envelopes: [envelope(1)])) }
    }

    @Test func readOnlyOpenOfAMissingDirectoryIsNotFound() throws {
        let dir = try TemporaryDirectory()
        do {
            _ = try DataDirectory(path: dir.sub("nothing-here"), reducerName: nil, options: .init(readOnly: true))
            Issue.record("opened a directory that does not exist")
        } catch {
            #expect(error.code == .notFound)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.sub("nothing-here")))
    }

    @Test func backupIsAConsistentCopy() throws {
        let dir = try TemporaryDirectory()
        do {
            let data = try DataDirectory(path: dir.sub("live"), reducerName: "test")
            try data.commit(CommitBatch(envelopes: (1...5).map { envelope($0) }))
            try FileManager.default.createDirectory(atPath: dir.sub("copy"), withIntermediateDirectories: true)
            try data.backup(to: dir.sub("copy"))
        }
        let copy = try DataDirectory(path: dir.sub("copy"), reducerName: nil, options: .init(readOnly: true))
        #expect(try copy.latestSeq() == 5)
        #expect(try copy.envelope(at: 5) == envelope(5))
    }
}
