import Foundation
import ReelJSON

/// One group commit as the journal holds it: the log records of consecutive seqs (exactly the
/// bytes LMDB's `log` database will hold) and the idempotency keys they used.
package struct JournalGroup: Sendable {
    /// The records of consecutive seqs (``EnvelopeCodec``'s).
    package var records: LogRecords
    package var dedup: [(key: String, record: DedupRecord)]

    package init(records: LogRecords, dedup: [(key: String, record: DedupRecord)]) {
        precondition(!records.isEmpty, "a group has at least one record")
        self.records = records
        self.dedup = dedup
    }

    /// A group of `records`, the first under `firstSeq` and each next one under the seq after.
    package init(firstSeq: UInt64, records: [[UInt8]], dedup: [(key: String, record: DedupRecord)]) {
        var logRecords = LogRecords()
        for (offset, record) in records.enumerated() {
            record.withUnsafeBytes { logRecords.append(seq: firstSeq + UInt64(offset), record: $0) }
        }
        self.init(records: logRecords, dedup: dedup)
    }

    package var firstSeq: UInt64 { records.firstSeq! }
    package var lastSeq: UInt64 { records.lastSeq! }
}

/// The journal's record format and how a file of them is read back. (`package`: the fuzzers
/// read journals directly.)
///
/// A record, 8-byte aligned:
///
///     magic "RLJ1" (u32) · payload length (u32) · first seq (u64) · record count (u32) ·
///     key count (u32) · checksum (u64: XXH3-64 of the 24 header bytes before it and the payload)
///     payload: each log record as varint length + bytes, then each key as varint length + UTF-8,
///     varint first seq, varint count
///     zero padding to a multiple of 8
///
/// Records are appended one per group and synced one at a time, so after a crash only the last
/// one can be torn. The file is reused from offset 0 once everything in it is in LMDB; what lies
/// past the newest records is then older records (lower seqs), zeros, or one torn record. Reading
/// follows the chain from offset 0 while each record is intact and continues the seqs of the one
/// before; anything intact with a *higher* seq after the point where the chain stops means an
/// acknowledged record in between is damaged, which is refused rather than served as a shorter log.
package enum JournalFormat {
    static let magic: UInt32 = 0x314A_4C52  // "RLJ1", little endian
    private static let magicFirstByte = UInt8(truncatingIfNeeded: magic)  // "R"
    static let headerSize = 32
    static let alignment = 8
    static let checksumSeed: UInt64 = 0x5265_656C_4A6E_6C31

    package static func encode(_ group: JournalGroup) -> [UInt8] {
        // The payload is written straight after room for the header, which is filled in after
        // it: written apart and then appended, every record was copied twice more.
        var writer = BinaryWriter(reservingCapacity: headerSize + group.records.byteCount + 3 * group.records.count + 16 + alignment)
        writer.bytes.appendZeros(headerSize)
        group.records.forEach { _, record in
            writer.writeVarint(UInt64(record.count))
            writer.bytes.append(contentsOf: record)
        }
        for (key, record) in group.dedup {
            writer.writeString(key)
            writer.writeVarint(record.firstSeq)
            writer.writeVarint(record.count)
        }
        var bytes = (consume writer).bytes  // (the only reference: changed in place)
        let length = bytes.count - headerSize
        bytes.withUnsafeMutableBytes { buffer in
            store(magic, in: buffer, at: 0)
            store(UInt32(length), in: buffer, at: 4)
            store(group.firstSeq, in: buffer, at: 8)
            store(UInt32(group.records.count), in: buffer, at: 16)
            store(UInt32(group.dedup.count), in: buffer, at: 20)
            let header = UnsafeRawBufferPointer(rebasing: buffer[0..<24])
            let payload = UnsafeRawBufferPointer(rebasing: buffer[headerSize...])
            store(checksum(header: header, payload: payload), in: buffer, at: 24)
        }
        bytes.appendZeros(padding(after: bytes.count))
        return bytes
    }

    /// The intact record at `offset`: its group and its size with padding; `nil` for anything
    /// else (zeros, a torn or damaged record, bytes that are not a record).
    package static func record(in file: UnsafeRawBufferPointer, at offset: Int) -> (group: JournalGroup, size: Int)? {
        guard offset >= 0, file.count - offset >= headerSize, load(UInt32.self, file, offset) == magic else { return nil }
        let length = Int(load(UInt32.self, file, offset + 4))
        let count = Int(load(UInt32.self, file, offset + 16))
        let keyCount = Int(load(UInt32.self, file, offset + 20))
        // (Each record takes at least its length's byte: a count beyond the length is no record.)
        guard count >= 1, count <= length, length <= file.count - offset - headerSize else { return nil }
        let header = UnsafeRawBufferPointer(rebasing: file[offset..<(offset + 24)])
        let payload = UnsafeRawBufferPointer(rebasing: file[(offset + headerSize)..<(offset + headerSize + length)])
        guard load(UInt64.self, file, offset + 24) == checksum(header: header, payload: payload) else { return nil }
        let firstSeq = load(UInt64.self, file, offset + 8)
        guard firstSeq >= 1, firstSeq <= UInt64.max - UInt64(count) else { return nil }
        var reader = BinaryReader(payload)
        var records = LogRecords()
        var dedup: [(key: String, record: DedupRecord)] = []
        do {
            records.reserveCapacity(bytes: length, records: count)
            for index in 0..<count {
                let size = try reader.readVarint()
                guard size <= reader.remaining else { return nil }
                let start = reader.position
                try reader.skip(Int(size))
                records.append(seq: firstSeq + UInt64(index), record: UnsafeRawBufferPointer(rebasing: payload[start..<reader.position]))
            }
            for _ in 0..<keyCount {
                let key = try reader.readString()
                let record = DedupRecord(firstSeq: try reader.readVarint(), count: try reader.readVarint())
                dedup.append((key, record))
            }
        } catch {
            return nil
        }
        guard reader.isAtEnd else { return nil }
        let size = headerSize + length
        return (JournalGroup(records: records, dedup: dedup), size + padding(after: size))
    }

    /// The groups of `file` holding seqs after `applied` (what LMDB already holds), in order and
    /// without a gap, starting at `applied + 1`.
    ///
    /// - Throws: ``StorageError`` `.corrupt` when an acknowledged record is damaged: intact records
    ///   with later seqs follow the point where the chain breaks, or the chain starts after a gap.
    static func unappliedGroups(in file: UnsafeRawBufferPointer, after applied: UInt64, path: String) throws(StorageError) -> [JournalGroup] {
        var offset = 0
        var chain: [JournalGroup] = []
        while let (group, size) = record(in: file, at: offset) {
            if let previous = chain.last, group.firstSeq != previous.lastSeq + 1 { break }
            chain.append(group)
            offset += size
        }
        let newest = max(chain.last?.lastSeq ?? 0, applied)
        // Past the chain's end lie only older records, zeros and at most one torn record. Only
        // the places where a record's magic starts are looked at: the rest (zeros, mostly, in an
        // allocated file) goes by at `memchr`'s speed.
        var probe = offset
        let end = file.count - headerSize
        while probe <= end, let base = file.baseAddress {
            guard let found = memchr(base + probe, Int32(magicFirstByte), end + 1 - probe) else { break }
            let position = base.distance(to: UnsafeRawPointer(found))
            guard position % alignment == 0 else {
                probe = position + 1
                continue
            }
            if load(UInt32.self, file, position) == magic, let (later, _) = record(in: file, at: position), later.firstSeq > newest {
                throw StorageError(
                    .corrupt,
                    "the journal \(path) is damaged at byte \(offset): acknowledged actions from seq \(later.firstSeq) follow a record that cannot be read"
                )
            }
            probe = position + alignment
        }
        var unapplied: [JournalGroup] = []
        for var group in chain where group.lastSeq > applied {
            if group.firstSeq <= applied {  // (never written so, but cheap to allow)
                group.records.removeFirst(Int(applied - group.firstSeq + 1))
            }
            unapplied.append(group)
        }
        if let first = unapplied.first, first.firstSeq != applied + 1 {
            throw StorageError(
                .corrupt,
                "the journal \(path) is damaged: the log ends at seq \(applied) and the journal continues at seq \(first.firstSeq)"
            )
        }
        return unapplied
    }

    package static func unappliedGroups(in file: [UInt8], after applied: UInt64, path: String) throws(StorageError) -> [JournalGroup] {
        try file.withUnsafeBytes { buffer in
            Result { () throws(StorageError) in try unappliedGroups(in: buffer, after: applied, path: path) }
        }.get()
    }

    static func padding(after size: Int) -> Int {
        (alignment - size % alignment) % alignment
    }

    private static func checksum(header: some ContiguousBytes, payload: some ContiguousBytes) -> UInt64 {
        // XXH3 of the header chained into the payload's seed: one pass over each, no copy.
        let headerSum = header.withUnsafeBytes { RecordChecksum.of($0, seed: checksumSeed) }
        return payload.withUnsafeBytes { RecordChecksum.of($0, seed: headerSum) }
    }

    private static func store<T: FixedWidthInteger>(_ value: T, in buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        buffer.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
    }

    private static func load<T: FixedWidthInteger>(_: T.Type, _ file: UnsafeRawBufferPointer, _ offset: Int) -> T {
        T(littleEndian: file.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
