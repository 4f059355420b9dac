import ReelCore
import ReelJSON
@testable import ReelStorage
import Testing

/// Log records back to back in one buffer: each read back as the codec wrote it, under its seq,
/// however the buffer was built (encoded in place, copied in, merged, cut at the front).
struct LogRecordsTests {
    func envelope(_ seq: UInt64) -> ActionEnvelope {
        ActionEnvelope(
            seq: seq, action: Action(type: "patch", payload: [["op": "add", "path": .string("/k\(seq)"), "value": .int(Int64(seq))]]),
            time: Timestamp(nanosecondsSince1970: 1_700_000_000_000_000_000 + Int64(seq)), peer: Peer(uid: 1, gid: 2, pid: Int32(seq))
        )
    }

    /// Each record's seq and bytes, as `forEach` hands them over.
    func contents(_ records: LogRecords) -> [(UInt64, [UInt8])] {
        var read: [(UInt64, [UInt8])] = []
        records.forEach { seq, bytes in read.append((seq, Array(bytes))) }
        return read
    }

    @Test func eachRecordReadsBackAsTheCodecWroteItUnderItsSeq() throws {
        var records = LogRecords()
        #expect(records.isEmpty && records.firstSeq == nil && records.lastSeq == nil && records.byteCount == 0)
        records.append(contentsOf: (5...9).map(envelope))
        records.append(envelope(10))
        #expect(records.count == 6 && records.firstSeq == 5 && records.lastSeq == 10)
        let read = contents(records)
        #expect(read.map(\.0) == Array(5...10))
        for (index, (seq, bytes)) in read.enumerated() {
            #expect(bytes == EnvelopeCodec.encode(envelope(seq)))
            #expect(records[index] == bytes && records.seq(at: index) == seq)
            #expect(records.withRecord(at: index) { Array($0) } == bytes)
            let decoded = try bytes.withUnsafeBytes { bytes throws(StorageError) in try EnvelopeCodec.decode(seq: seq, from: bytes) }
            #expect(decoded == envelope(seq))
        }
        #expect(records.byteCount == read.reduce(0) { $0 + $1.1.count })
        #expect(try records.envelopes() == (5...10).map(envelope))

        // A record that does not check is named, not decoded.
        var damaged = LogRecords()
        damaged.append(envelope(1))
        var bytes = EnvelopeCodec.encode(envelope(2))
        bytes[bytes.count / 2] ^= 0x40
        bytes.withUnsafeBytes { damaged.append(seq: 2, record: $0) }
        #expect {
            try damaged.envelopes()
        } throws: { error in
            (error as? StorageError)?.code == .corrupt && "\(error)".contains("2")
        }
    }

    @Test func aBinaryPayloadMakesTheRecordItsTreeWould() {
        var records = LogRecords()
        let action = envelope(3)
        let payload = action.action.payload.binaryEncoded()
        payload.withUnsafeBytes { records.append(action, binaryPayload: $0) }
        #expect(records[0] == EnvelopeCodec.encode(action))
    }

    @Test func recordsCopiedInMergedAndCutKeepTheirSeqsAndBytes() {
        var first = LogRecords()
        first.append(contentsOf: (1...3).map(envelope))
        var second = LogRecords()
        for seq in UInt64(4)...6 {
            EnvelopeCodec.encode(envelope(seq)).withUnsafeBytes { second.append(seq: seq, record: $0) }
        }
        var merged = LogRecords()
        merged.append(contentsOf: first)
        #expect(merged == first)
        merged.append(contentsOf: second)
        merged.append(contentsOf: LogRecords())
        #expect(contents(merged).map(\.0) == Array(1...6))
        #expect(contents(merged).map(\.1) == (1...6).map { EnvelopeCodec.encode(envelope($0)) })
        // Room reserved first: the records copied in, not shared.
        var reserved = LogRecords()
        reserved.reserveCapacity(bytes: merged.byteCount, records: merged.count)
        reserved.append(contentsOf: first)
        reserved.append(contentsOf: second)
        #expect(reserved == merged)

        var cut = merged
        cut.removeFirst(2)
        #expect(contents(cut).map(\.0) == Array(3...6))
        #expect(contents(cut).map(\.1) == (3...6).map { EnvelopeCodec.encode(envelope($0)) })
        #expect(contents(merged).map(\.0) == Array(1...6), "the copy cut is a copy")
        cut.removeFirst(4)
        #expect(cut.isEmpty && cut.byteCount == 0)
        merged.removeAll(keepingCapacity: true)
        #expect(merged.isEmpty && merged.lastSeq == nil)
    }

    @Test func aFailureInsideForEachStopsItAndReachesTheCaller() {
        var records = LogRecords()
        records.append(contentsOf: (1...4).map(envelope))
        var seen: [UInt64] = []
        #expect(throws: StorageError.self) {
            try records.forEach { (seq, _) throws(StorageError) in
                seen.append(seq)
                if seq == 2 { throw StorageError(.corrupt, "stop") }
            }
        }
        #expect(seen == [1, 2])
    }

    @Test func batchesMergedForTheApplierAreTheirGroupsInOrder() {
        let groups = [(1...2), (3...5), (6...6)].map { range in
            EncodedBatch(CommitBatch(envelopes: range.map(envelope), dedup: [("k\(range.first!)", DedupRecord(firstSeq: UInt64(range.first!), count: UInt64(range.count)))]))
        }
        let merged = EncodedBatch(merging: groups)
        #expect(contents(merged.records).map(\.0) == Array(1...6))
        #expect(contents(merged.records).map(\.1) == (1...6).map { EnvelopeCodec.encode(envelope($0)) })
        #expect(merged.envelopes.map(\.seq) == Array(1...6))
        #expect(merged.dedup.map { String(decoding: $0.key, as: UTF8.self) } == ["k1", "k3", "k6"])
        #expect(merged.recordBytes == groups.reduce(0) { $0 + $1.recordBytes })
        #expect(EncodedBatch(merging: [groups[1]]).records == groups[1].records)
        #expect(EncodedBatch(merging: []).isEmpty)
    }

    @Test func aJournalGroupReadsBackRecordForRecord() throws {
        var records = LogRecords()
        records.append(contentsOf: (41...44).map(envelope))
        let group = JournalGroup(records: records, dedup: [("key", DedupRecord(firstSeq: 41, count: 4))])
        let file = JournalFormat.encode(group)
        let read = try #require(file.withUnsafeBytes { JournalFormat.record(in: $0, at: 0) })
        #expect(read.group.records == records && read.group.firstSeq == 41 && read.group.lastSeq == 44)
        #expect(read.group.dedup.map(\.key) == ["key"] && read.size == file.count)
    }
}
