import Crypto
import ReelCore
import ReelJSON

/// A snapshot of the state at a seq, stamped with the reducer that made it and a SHA-256 hash of
/// its encoding.
///
/// The state is stored as binary JSON, which is canonical (object members sorted), so two equal
/// states have the same bytes and the same hash: `reel verify` compares hashes, and a checkpoint
/// whose bytes no longer match its hash is never loaded.
public struct Checkpoint: Sendable {
    public var seq: UInt64
    public var reducer: ReducerIdentity
    /// When the checkpoint was made (not part of the state; for people).
    public var time: Timestamp
    /// The state, encoded with `JSONValue.binaryEncoded()`.
    public var stateBytes: [UInt8]
    /// SHA-256 of ``stateBytes``.
    public var hash: [UInt8]

    /// Encodes a state and hashes it. This is the expensive part of checkpointing; the store runs it
    /// off the write path.
    public init(seq: UInt64, reducer: ReducerIdentity, time: Timestamp, state: JSONValue) {
        let bytes = state.binaryEncoded()
        self.init(seq: seq, reducer: reducer, time: time, stateBytes: bytes, hash: Self.hash(of: bytes))
    }

    init(seq: UInt64, reducer: ReducerIdentity, time: Timestamp, stateBytes: [UInt8], hash: [UInt8]) {
        self.seq = seq
        self.reducer = reducer
        self.time = time
        self.stateBytes = stateBytes
        self.hash = hash
    }

    /// SHA-256 of encoded state bytes.
    public static func hash(of bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }

    /// Whether the stored bytes still match the stored hash.
    public var isIntact: Bool { Self.hash(of: stateBytes) == hash }

    /// The hash as lowercase hex, for people and logs.
    public var hashHex: String { Self.hex(hash) }

    /// Bytes (a hash) as lowercase hex, two digits each: how checkpoint hashes, `verify` and
    /// `digest` show SHA-256 digests.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Decodes the state.
    ///
    /// - Parameter checkingHash: `false` only for a checkpoint whose hash was just checked (as
    ///   `DataDirectory.newestCheckpoint` does): hashing a large state twice costs real time.
    /// - Throws: ``StorageError`` `.corrupt` when the bytes do not match the hash or do not decode.
    public func state(checkingHash: Bool = true) throws(StorageError) -> JSONValue {
        guard !checkingHash || isIntact else {
            throw StorageError(.corrupt, "checkpoint at seq \(seq) does not match its hash")
        }
        do {
            return try JSONValue(binary: stateBytes)
        } catch {
            throw StorageError(.corrupt, "checkpoint at seq \(seq) does not decode: \(error.message)", underlying: error)
        }
    }
}

extension Checkpoint {
    /// Decodes only what lies on the way to `path` (``BinaryReader/readJSON(keepingOnly:maxDepth:)``)
    /// from a checkpoint whose hash was just checked.
    public func state(keepingOnly path: JSONPointer) throws(StorageError) -> JSONValue {
        let decoded = stateBytes.withUnsafeBytes { bytes in
            Result { () throws(JSONError) -> JSONValue in
                var reader = BinaryReader(bytes)
                let value = try reader.readJSON(keepingOnly: path.tokens[...])
                guard reader.isAtEnd else { throw JSONError(.corruptBinary, "\(reader.remaining) bytes left over", offset: reader.position) }
                return value
            }
        }
        do throws(JSONError) {
            return try decoded.get()
        } catch {
            throw StorageError(.corrupt, "checkpoint at seq \(seq) does not decode: \(error.message)", underlying: error)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// On-disk layout of a checkpoint (value of the `checkpoints` database; the key is the seq):
/// record version (2) · reducer name · reducer version (strings) · time (zigzag varint) ·
/// hash length (varint) · hash · the state bytes · checksum (``RecordChecksum``, seeded with the
/// seq). Version 1, written by storage format 1, is the same without the checksum.
///
/// The checksum covers the whole record, header included, so it is checked even when only the
/// header is wanted: a damaged checkpoint is never listed, compared or loaded. (XXH3 reads even a
/// large state in milliseconds.)
package enum CheckpointCodec {
    static let legacyVersion: UInt8 = 1
    static let recordVersion: UInt8 = 2

    static func encode(_ checkpoint: Checkpoint) -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: checkpoint.stateBytes.count + 96)
        writer.writeUInt8(recordVersion)
        writer.writeString(checkpoint.reducer.name)
        writer.writeString(checkpoint.reducer.version)
        writer.writeSignedVarint(checkpoint.time.nanosecondsSince1970)
        writer.writeVarint(UInt64(checkpoint.hash.count))
        writer.writeBytes(checkpoint.hash)
        writer.writeBytes(checkpoint.stateBytes)
        RecordChecksum.seal(&writer.bytes, seed: checkpoint.seq)  // in place: a copy would copy to append
        return writer.bytes
    }

    /// Decodes the header, and the state bytes too unless `headerOnly`, after checking the checksum.
    ///
    /// - Parameter acceptingLegacy: whether a version-1 record (no checksum) may be read.
    /// - Throws: ``StorageError`` `.corrupt` when the record is damaged.
    package static func decode(
        seq: UInt64, from bytes: UnsafeRawBufferPointer, headerOnly: Bool = false, acceptingLegacy: Bool = false
    ) throws(StorageError) -> Checkpoint {
        let body = try RecordChecksum.checkedBody(
            bytes, seed: seq, version: recordVersion, legacyVersion: acceptingLegacy ? legacyVersion : nil
        ) { "checkpoint \(seq) is damaged: \($0)" }
        do {
            var reader = BinaryReader(body)
            _ = try reader.readUInt8()
            let name = try reader.readString()
            let reducerVersion = try reader.readString()
            let time = try reader.readSignedVarint()
            let hashCount = try reader.readVarint()
            guard hashCount <= 64 else { throw StorageError(.corrupt, "checkpoint \(seq) is damaged: a hash of \(hashCount) bytes") }
            let hash = try reader.readBytes(count: Int(hashCount))
            let state = headerOnly ? [] : try reader.readBytes(count: body.count - reader.position)
            return Checkpoint(
                seq: seq, reducer: ReducerIdentity(name: name, version: reducerVersion),
                time: Timestamp(nanosecondsSince1970: time), stateBytes: state, hash: hash
            )
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, "checkpoint \(seq) is damaged: \(error)", underlying: error)
        }
    }
}
