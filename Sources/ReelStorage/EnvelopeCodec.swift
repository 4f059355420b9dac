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
        // The header (time, peer, type, key, meta, exe) takes at most about 40 bytes and the
        // strings' own (with their lengths); the checksum sealed on at the end 8 more.
        let meta = envelope.meta.flatMap { $0.isEmpty ? nil : $0 }
        var stringBytes = envelope.action.type.utf8.count + (envelope.idempotencyKey?.utf8.count ?? 0)
        if let meta { stringBytes += meta.members.reduce(1) { $0 + $1.value.utf8.count + 2 } }
        if let exe = envelope.peer.exe { stringBytes += exe.utf8.count + 2 }
        var writer = BinaryWriter(
            reservingCapacity: 48 + stringBytes + BinaryWriter.estimatedSize(of: envelope.action.payload) + RecordChecksum.byteCount
        )
        writer.writeUInt8(recordVersion)
        writer.writeSignedVarint(envelope.time.nanosecondsSince1970)
        writer.writeVarint(UInt64(envelope.peer.uid))
        writer.writeVarint(UInt64(envelope.peer.gid))
        writer.writeSignedVarint(Int64(envelope.peer.pid))
        writer.writeString(envelope.action.type)
        var flags: UInt8 = 0
        if envelope.idempotencyKey != nil { flags |= hasKey }
        if meta != nil { flags |= hasMeta }
        if envelope.peer.exe != nil { flags |= hasExe }
        let version = envelope.version
        if version != 1 { flags |= hasVersion }
        writer.writeUInt8(flags)
        if let key = envelope.idempotencyKey { writer.writeString(key) }
        if let meta {
            var present: UInt8 = 0
            for (bit, member) in ActionMeta.Member.allCases.enumerated() where meta[member] != nil { present |= 1 << bit }
            writer.writeUInt8(present)
            for (_, value) in meta.members { writer.writeString(value) }
        }
        if let exe = envelope.peer.exe { writer.writeString(exe) }
        if version != 1 { writer.writeVarint(UInt64(clamping: version)) }
        writer.writeJSON(envelope.action.payload)
        // Sealed in place: a copy of `writer.bytes` would share its storage and copy it to append.
        RecordChecksum.seal(&writer.bytes, seed: envelope.seq)
        return writer.bytes
    }

    /// Decodes the record stored under `seq`, after checking its checksum.
    ///
    /// - Parameter acceptingLegacy: whether a version-1 record (no checksum) may be read.
    /// - Throws: ``StorageError`` `.corrupt`, naming the seq, when the record is damaged.
    package static func decode(seq: UInt64, from bytes: UnsafeRawBufferPointer, acceptingLegacy: Bool = false) throws(StorageError) -> ActionEnvelope {
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
            let payload = try reader.readJSON()
            guard reader.isAtEnd, let uid = UInt32(exactly: uid), let gid = UInt32(exactly: gid),
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
    /// The type and version of the action a record holds, read from its header alone (the payload
    /// and the checksum are not looked at: the caller has checked the record, or is about to);
    /// `nil` when the header does not read.
    package static func typeAndVersion(of bytes: UnsafeRawBufferPointer) -> (type: String, version: Int)? {
        var reader = BinaryReader(bytes)
        do {
            _ = try reader.readUInt8()
            _ = try reader.readSignedVarint()
            _ = try reader.readVarint()
            _ = try reader.readVarint()
            _ = try reader.readSignedVarint()
            let type = try reader.readString()
            let flags = try reader.readUInt8()
            guard flags & hasVersion != 0 else { return (type, 1) }
            if flags & hasKey != 0 { _ = try reader.readString() }
            if flags & hasMeta != 0 {
                let present = try reader.readUInt8()
                for _ in 0..<present.nonzeroBitCount { _ = try reader.readString() }
            }
            if flags & hasExe != 0 { _ = try reader.readString() }
            guard let version = Int(exactly: try reader.readVarint()) else { return nil }
            return (type, version)
        } catch {
            return nil
        }
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
