import ReelCore
import ReelJSON

/// The on-disk encoding of a logged action (the value of the `log` database; the key is the seq).
///
/// Layout: record version (2) · `time` (zigzag varint, ns since 1970) · `uid` `gid` (varint) ·
/// `pid` (zigzag varint) · `type` (string) · flags (byte; bit 0: an idempotency key follows) ·
/// [`key` (string)] · `payload` (binary JSON, see `BinaryWriter.writeJSON`) · checksum (see
/// ``RecordChecksum``, seeded with the seq). Strings are a varint length and UTF-8.
///
/// Record version 1 is the same without the checksum: storage format 1 wrote it, and it is read
/// only from a directory that has not been upgraded yet (``DataDirectory/acceptsLegacyRecords``).
///
/// `package`, not public: the fuzzers (`Tools/Fuzz`) decode records directly.
package enum EnvelopeCodec {
    static let legacyVersion: UInt8 = 1
    static let recordVersion: UInt8 = 2

    package static func encode(_ envelope: ActionEnvelope) -> [UInt8] {
        // The header (time, peer, type, key) takes at most about 40 bytes and the type's and
        // key's own; the checksum sealed on at the end 8 more.
        let keyBytes = envelope.idempotencyKey?.utf8.count ?? 0
        var writer = BinaryWriter(
            reservingCapacity: 48 + envelope.action.type.utf8.count + keyBytes + BinaryWriter.estimatedSize(of: envelope.action.payload)
                + RecordChecksum.byteCount
        )
        writer.writeUInt8(recordVersion)
        writer.writeSignedVarint(envelope.time.nanosecondsSince1970)
        writer.writeVarint(UInt64(envelope.peer.uid))
        writer.writeVarint(UInt64(envelope.peer.gid))
        writer.writeSignedVarint(Int64(envelope.peer.pid))
        writer.writeString(envelope.action.type)
        if let key = envelope.idempotencyKey {
            writer.writeUInt8(1)
            writer.writeString(key)
        } else {
            writer.writeUInt8(0)
        }
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
            let key = flags & 1 == 1 ? try reader.readString() : nil
            let payload = try reader.readJSON()
            guard reader.isAtEnd, flags <= 1, let uid = UInt32(exactly: uid), let gid = UInt32(exactly: gid),
                let pid = Int32(exactly: pid)
            else {
                throw StorageError(.corrupt, "action \(seq) is damaged: unexpected fields")
            }
            return ActionEnvelope(
                seq: seq, action: Action(type: type, payload: payload),
                time: Timestamp(nanosecondsSince1970: time), peer: Peer(uid: uid, gid: gid, pid: pid),
                idempotencyKey: key
            )
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, "action \(seq) is damaged: \(error)", underlying: error)
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
