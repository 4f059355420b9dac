import ReelCore
import ReelJSON

/// The on-disk encoding of a logged action (the value of the `log` database; the key is the seq).
///
/// Layout: record version (2) · `time` (zigzag varint, ns since 1970) · `uid` `gid` (varint) ·
/// `pid` (zigzag varint) · `type` (string) · flags (byte) · [`key` (string), flags bit 0] ·
/// [meta, bit 1: a byte of the members present (bit 0 `causationId`, 1 `correlationId`,
/// 2 `source`, 3 `traceparent`; at least one) and each present member's value (string), in that
/// order] · [`exe` of the peer (string), bit 2] · [the action's version (varint, 2 or more),
/// bit 3: the version of the payload's shape, absent for version 1] · `payload` (binary JSON, see
/// `BinaryWriter.writeJSON`) · checksum (see ``RecordChecksum``, seeded with the seq). Strings
/// are a varint length and UTF-8.
///
/// Records written before meta, exe and versions existed have flags 0 or 1 and read as they always
/// did; a flag or member bit this build does not know is damage. (A build from before them reads
/// a record with meta, exe or a version as damaged.)
///
/// Record version 1 is the same without the checksum: storage format 1 wrote it, and it is read
/// only from a directory that has not been upgraded yet (``DataDirectory/acceptsLegacyRecords``).
///
/// `package`, not public: the fuzzers (`Tools/Fuzz`) decode records directly.
package enum EnvelopeCodec {
    static let legacyVersion: UInt8 = 1
    static let recordVersion: UInt8 = 2

    /// The flags byte's bits.
    static let hasKey: UInt8 = 1 << 0
    static let hasMeta: UInt8 = 1 << 1
    static let hasExe: UInt8 = 1 << 2
    static let hasVersion: UInt8 = 1 << 3
    static let knownFlags: UInt8 = hasKey | hasMeta | hasExe | hasVersion

    package static func encode(_ envelope: ActionEnvelope) -> [UInt8] {
        // Sized exactly first, then written through a pointer into one allocation with room for
        // the checksum sealed on at the end. (Filled with zeros first:
        // `Array(unsafeUninitializedCapacity:)` looks the array's generic metadata up at every
        // call, which took longer than the filling.)
        let header = RecordHeader(envelope, payloadSize: BinaryWriter.encodedSize(of: envelope.action.payload))
        var record = [UInt8](repeating: 0, count: header.recordSize)
        record.withUnsafeMutableBufferPointer { buffer in
            write(envelope, header, at: buffer.baseAddress!) { $0.writeJSON(envelope.action.payload) }
        }
        return record
    }

    /// Appends `envelope`'s record to `bytes` (records back to back, as `reel import` batches them).
    package static func append(_ envelope: ActionEnvelope, to bytes: inout [UInt8]) {
        let header = RecordHeader(envelope, payloadSize: BinaryWriter.encodedSize(of: envelope.action.payload))
        let offset = bytes.count
        bytes.appendZeros(header.recordSize)
        bytes.withUnsafeMutableBufferPointer { buffer in
            write(envelope, header, at: buffer.baseAddress! + offset) { $0.writeJSON(envelope.action.payload) }
        }
    }

    /// Appends the record of `envelope` with `payload` in place of its payload: the payload's
    /// binary encoding as ``BinaryWriter/writeJSON(_:)`` writes it (`reel import`'s lines,
    /// transcoded without a tree of values).
    package static func append(_ envelope: ActionEnvelope, binaryPayload payload: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        let header = RecordHeader(envelope, payloadSize: payload.count)
        let offset = bytes.count
        bytes.appendZeros(header.recordSize)
        bytes.withUnsafeMutableBufferPointer { buffer in
            write(envelope, header, at: buffer.baseAddress! + offset) { $0.writeBytes(payload) }
        }
    }

    /// What a record's header holds beyond the envelope's fields, and the record's size.
    private struct RecordHeader {
        let meta: ActionMeta?
        let version: Int
        let time: UInt64
        let pid: UInt64
        let flags: UInt8
        /// The record's bytes before the checksum.
        let size: Int

        var recordSize: Int { size + RecordChecksum.byteCount }

        @inline(__always)
        init(_ envelope: ActionEnvelope, payloadSize: Int) {
            meta = envelope.meta.flatMap { $0.isEmpty ? nil : $0 }
            version = envelope.version
            time = BinaryWriter.zigzag(envelope.time.nanosecondsSince1970)
            pid = BinaryWriter.zigzag(Int64(envelope.peer.pid))
            var size = 2 + BinaryWriter.varintSize(time) + BinaryWriter.varintSize(UInt64(envelope.peer.uid))
                + BinaryWriter.varintSize(UInt64(envelope.peer.gid)) + BinaryWriter.varintSize(pid)
                + BinaryWriter.stringSize(envelope.action.type) + payloadSize
            var flags: UInt8 = 0
            if let key = envelope.idempotencyKey {
                flags |= hasKey
                size += BinaryWriter.stringSize(key)
            }
            if let meta {
                flags |= hasMeta
                size += meta.members.reduce(1) { $0 + BinaryWriter.stringSize($1.value) }
            }
            if let exe = envelope.peer.exe {
                flags |= hasExe
                size += BinaryWriter.stringSize(exe)
            }
            if version != 1 {
                flags |= hasVersion
                size += BinaryWriter.varintSize(UInt64(clamping: version))
            }
            self.flags = flags
            self.size = size
        }
    }

    /// Writes `envelope`'s record at `start`, which has room for `header.recordSize` bytes.
    @inline(__always)
    private static func write(
        _ envelope: ActionEnvelope, _ header: RecordHeader, at start: UnsafeMutablePointer<UInt8>, writePayload: (inout BinaryCursor) -> Void
    ) {
        var cursor = BinaryCursor(start)
        cursor.writeByte(recordVersion)
        cursor.writeVarint(header.time)
        cursor.writeVarint(UInt64(envelope.peer.uid))
        cursor.writeVarint(UInt64(envelope.peer.gid))
        cursor.writeVarint(header.pid)
        cursor.writeString(envelope.action.type)
        cursor.writeByte(header.flags)
        if let key = envelope.idempotencyKey { cursor.writeString(key) }
        if let meta = header.meta {
            var present: UInt8 = 0
            for (bit, member) in ActionMeta.Member.allCases.enumerated() where meta[member] != nil { present |= 1 << bit }
            cursor.writeByte(present)
            for (_, value) in meta.members { cursor.writeString(value) }
        }
        if let exe = envelope.peer.exe { cursor.writeString(exe) }
        if header.version != 1 { cursor.writeVarint(UInt64(clamping: header.version)) }
        writePayload(&cursor)
        let size = header.size
        precondition(cursor.position == start + size, "a record's encoding differs from its size")
        let sum = RecordChecksum.of(UnsafeRawBufferPointer(start: start, count: size), seed: envelope.seq)
        withUnsafeBytes(of: sum.littleEndian) { UnsafeMutableRawPointer(start + size).copyMemory(from: $0.baseAddress!, byteCount: RecordChecksum.byteCount) }
    }

    /// Decodes the record stored under `seq`, after checking its checksum.
    ///
    /// - Parameter acceptingLegacy: whether a version-1 record (no checksum) may be read.
    /// - Throws: ``StorageError`` `.corrupt`, naming the seq, when the record is damaged.
    package static func decode(seq: UInt64, from bytes: UnsafeRawBufferPointer, acceptingLegacy: Bool = false) throws(StorageError) -> ActionEnvelope {
        var prepared: PreparedStockAction?
        return try decode(seq: seq, from: bytes, acceptingLegacy: acceptingLegacy, preparing: false, into: &prepared)
    }

    /// Decodes the record stored under `seq` as ``decode(seq:from:acceptingLegacy:)`` does, or,
    /// when `preparing` and it holds a stock action of a plain shape, reads its payload straight
    /// into `prepared` (a ``PreparedStockAction``), the envelope's payload left `null`.
    package static func decode(
        seq: UInt64, from bytes: UnsafeRawBufferPointer, acceptingLegacy: Bool, preparing: Bool, into prepared: inout PreparedStockAction?
    ) throws(StorageError) -> ActionEnvelope {
        prepared = nil
        let body = try RecordChecksum.checkedBody(bytes, seed: seq, version: recordVersion, legacyVersion: acceptingLegacy ? legacyVersion : nil) {
            "action \(seq) is damaged: \($0)"
        }
        do {
            var reader = BinaryReader(body)
            _ = try reader.readUInt8()
            let time = try reader.readSignedVarint()
            let uid = try reader.readVarint()
            let gid = try reader.readVarint()
            let pid = try reader.readSignedVarint()
            let type = try reader.readString()
            let flags = try reader.readUInt8()
            guard flags & ~knownFlags == 0 else {
                throw StorageError(.corrupt, "action \(seq) is damaged: unknown flags \(flags)")
            }
            let key = flags & hasKey != 0 ? try reader.readString() : nil
            var meta: ActionMeta?
            if flags & hasMeta != 0 {
                let present = try reader.readUInt8()
                let members = ActionMeta.Member.allCases
                guard present != 0, present >> members.count == 0 else {
                    throw StorageError(.corrupt, "action \(seq) is damaged: unknown meta members \(present)")
                }
                var read = ActionMeta()
                for (bit, member) in members.enumerated() where present & (1 << bit) != 0 { read[member] = try reader.readString() }
                meta = read
            }
            let exe = flags & hasExe != 0 ? try reader.readString() : nil
            var version: Int?
            if flags & hasVersion != 0 {
                let stored = try reader.readVarint()
                guard stored >= 2, let read = Int(exactly: stored) else {
                    throw StorageError(.corrupt, "action \(seq) is damaged: version \(stored)")
                }
                version = read
            }
            // A prepared action's reader takes exactly one value to the end of the payload, or
            // gives up, leaving the reading (and the wording of any damage) to the general path.
            var payload = JSONValue.null
            if preparing, version == nil,
                let read = PreparedStockAction(type: type, binaryPayload: UnsafeRawBufferPointer(rebasing: body[reader.position...]))
            {
                prepared = read
            } else {
                payload = try reader.readJSON()
            }
            guard prepared != nil || reader.isAtEnd, let uid = UInt32(exactly: uid), let gid = UInt32(exactly: gid),
                let pid = Int32(exactly: pid)
            else {
                throw StorageError(.corrupt, "action \(seq) is damaged: unexpected fields")
            }
            return ActionEnvelope(
                seq: seq, action: Action(type: type, payload: payload, version: version),
                time: Timestamp(nanosecondsSince1970: time), peer: Peer(uid: uid, gid: gid, pid: pid, exe: exe),
                idempotencyKey: key, meta: meta
            )
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, "action \(seq) is damaged: \(error)", underlying: error)
        }
    }
}

extension EnvelopeCodec {
    /// Checks the record stored under `seq` as the integrity scan does: a current record by its
    /// checksum alone, a version-1 record (no checksum) by decoding it.
    ///
    /// A current record whose checksum matches holds the very bytes its writer sealed, which were a
    /// valid record; decoding it as well doubled the scan's cost (half of `reel verify`'s
    /// scan-then-replay went into decoding payloads twice), and every read decodes it anyway.
    ///
    /// - Throws: ``StorageError`` `.corrupt`, naming the seq, as ``decode(seq:from:acceptingLegacy:)``.
    package static func check(seq: UInt64, record bytes: UnsafeRawBufferPointer, acceptingLegacy: Bool = false) throws(StorageError) {
        if bytes.first == legacyVersion, acceptingLegacy {
            _ = try decode(seq: seq, from: bytes, acceptingLegacy: true)
            return
        }
        _ = try RecordChecksum.checkedBody(bytes, seed: seq, version: recordVersion, legacyVersion: nil) {
            "action \(seq) is damaged: \($0)"
        }
    }
}

extension EnvelopeCodec {
    /// The stock action a record holds read prepared (``PreparedStockAction``), without building
    /// its envelope: for a fold that only applies it (`reel import`, which decodes its records
    /// again). `nil` unless the record checks and holds a `patch`, `set` or `increment` of the
    /// first version, without an idempotency key, that reads prepared: the caller then decodes it
    /// the ordinary way, which says what is wrong if anything is.
    package static func preparedStockAction(seq: UInt64, from bytes: UnsafeRawBufferPointer) -> PreparedStockAction? {
        guard bytes.first == recordVersion, let body = RecordChecksum.open(bytes, seed: seq) else { return nil }
        var reader = BinaryReader(body)
        do {
            let type = try readType(&reader)
            guard PreparedStockAction.mayRead(type: type) else { return nil }
            let flags = try reader.readUInt8()
            guard flags & ~(hasMeta | hasExe) == 0 else { return nil }
            try skipMetaAndExe(flags: flags, &reader)
            return PreparedStockAction(type: type, binaryPayload: UnsafeRawBufferPointer(rebasing: body[reader.position...]))
        } catch {
            return nil
        }
    }

    /// The type and version of the action a record holds, read from its header alone (the payload
    /// and the checksum are not looked at: the caller has checked the record, or is about to);
    /// `nil` when the header does not read.
    package static func typeAndVersion(of bytes: UnsafeRawBufferPointer) -> (type: String, version: Int)? {
        var reader = BinaryReader(bytes)
        do {
            let type = try readType(&reader)
            let flags = try reader.readUInt8()
            guard flags & hasVersion != 0 else { return (type, 1) }
            if flags & hasKey != 0 { _ = try reader.readString() }
            try skipMetaAndExe(flags: flags, &reader)
            guard let version = Int(exactly: try reader.readVarint()) else { return nil }
            return (type, version)
        } catch {
            return nil
        }
    }
}

extension EnvelopeCodec {
    /// Reads a record's header up to its type (the version byte, time, uid, gid, pid), and the type.
    private static func readType(_ reader: inout BinaryReader) throws(JSONError) -> String {
        _ = try reader.readUInt8()
        _ = try reader.readSignedVarint()
        _ = try reader.readVarint()
        _ = try reader.readVarint()
        _ = try reader.readSignedVarint()
        return try reader.readString()
    }

    /// Reads past the meta and the exe that `flags` say follow (after the key, if any).
    private static func skipMetaAndExe(flags: UInt8, _ reader: inout BinaryReader) throws(JSONError) {
        if flags & hasMeta != 0 {
            let present = try reader.readUInt8()
            guard present != 0, present >> ActionMeta.Member.allCases.count == 0 else {
                throw JSONError(.corruptBinary, "unknown meta members \(present)")
            }
            for _ in 0..<present.nonzeroBitCount { _ = try reader.readString() }
        }
        if flags & hasExe != 0 { _ = try reader.readString() }
    }
}

extension RecordChecksum {
    /// The part of a versioned record to decode (version byte included, checksum left off), after
    /// checking the version and, for a current record, the checksum.
    ///
    /// - Parameters:
    ///   - version: the current record version, which carries a checksum.
    ///   - legacyVersion: an older version without checksum that may be read as is, if any.
    ///   - damaged: makes the message of the error from the reason.
    static func checkedBody(
        _ bytes: UnsafeRawBufferPointer, seed: UInt64, version: UInt8, legacyVersion: UInt8?,
        damaged: (String) -> String
    ) throws(StorageError) -> UnsafeRawBufferPointer {
        guard let stored = bytes.first else { throw StorageError(.corrupt, damaged("the record is empty")) }
        if stored == version {
            guard let body = open(bytes, seed: seed) else {
                throw StorageError(.corrupt, damaged("its checksum does not match its contents"))
            }
            return body
        }
        if let legacyVersion, stored == legacyVersion { return bytes }
        // A directory's records all have the version its format says (older ones are upgraded
        // when the daemon opens it), so any other version byte is damage.
        throw StorageError(.corrupt, damaged("unknown record version \(stored)"))
    }
}
