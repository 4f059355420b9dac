import ReelCore
import ReelJSON

/// The on-disk encoding of a logged action (the value of the `log` database; the key is the seq).
///
/// Layout, after a one-byte record version (1):
/// `time` (zigzag varint, ns since 1970) · `uid` `gid` (varint) · `pid` (zigzag varint) ·
/// `type` (string) · flags (byte; bit 0: an idempotency key follows) · [`key` (string)] ·
/// `payload` (binary JSON, see `BinaryWriter.writeJSON`). Strings are a varint length and UTF-8.
enum EnvelopeCodec {
    static let recordVersion: UInt8 = 1

    static func encode(_ envelope: ActionEnvelope) -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 64)
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
        return writer.bytes
    }

    static func decode(seq: UInt64, from bytes: UnsafeRawBufferPointer) throws(StorageError) -> ActionEnvelope {
        do {
            var reader = BinaryReader(bytes)
            let version = try reader.readUInt8()
            guard version == recordVersion else {
                throw StorageError(.incompatible, "action \(seq) has record version \(version); this build reads \(recordVersion)")
            }
            let time = try reader.readSignedVarint()
            let uid = try reader.readVarint()
            let gid = try reader.readVarint()
            let pid = try reader.readSignedVarint()
            let type = try reader.readString()
            let flags = try reader.readUInt8()
            let key = flags & 1 == 1 ? try reader.readString() : nil
            let payload = try reader.readJSON()
            guard reader.isAtEnd, let uid = UInt32(exactly: uid), let gid = UInt32(exactly: gid),
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
