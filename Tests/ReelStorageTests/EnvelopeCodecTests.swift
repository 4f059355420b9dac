import ReelCore
import ReelJSON
@testable import ReelStorage
import Testing

/// The log record's optional parts: the meta and the peer's exe (flags bits 1 and 2) beside the
/// idempotency key (bit 0), and records from before them.
struct EnvelopeCodecTests {
    static let meta = ActionMeta(
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", correlationId: "order-17",
        causationId: "41", source: "checkout"
    )

    static func envelope(seq: UInt64 = 7, key: String? = nil, meta: ActionMeta? = nil, exe: String? = nil) -> ActionEnvelope {
        ActionEnvelope(
            seq: seq, action: Action(type: "set", payload: ["n": 1]), time: Timestamp(nanosecondsSince1970: 5),
            peer: Peer(uid: 1000, gid: 100, pid: 4242, exe: exe), idempotencyKey: key, meta: meta
        )
    }

    func decode(_ bytes: [UInt8], seq: UInt64 = 7) throws -> ActionEnvelope {
        try bytes.withUnsafeBytes { try EnvelopeCodec.decode(seq: seq, from: $0) }
    }

    @Test func metaAndExeRoundTrip() throws {
        let cases = [
            Self.envelope(meta: Self.meta, exe: "/usr/local/bin/reel"),
            Self.envelope(key: "k-1", meta: Self.meta, exe: "/opt/app/bin/checkout"),
            Self.envelope(meta: ActionMeta(correlationId: "only-this")),
            Self.envelope(meta: ActionMeta(source: "")),
            Self.envelope(key: "k-2", meta: ActionMeta(causationId: "x", source: "cron")),
            Self.envelope(exe: "/home/ünïcode/bin/tool (deleted)"),
            Self.envelope(key: "k-3", exe: "/bin/sh"),
        ]
        for original in cases {
            let decoded = try decode(EnvelopeCodec.encode(original))
            #expect(decoded == original)
            #expect(decoded.meta == original.meta)
            #expect(decoded.peer.exe == original.peer.exe)
        }
    }

    @Test func aMetaTakesOneReferenceInAnEnvelope() {
        #expect(MemoryLayout<ActionMeta?>.size == MemoryLayout<UnsafeRawPointer>.size)
        var meta = Self.meta
        let copy = meta
        meta.source = "changed"
        #expect(copy.source == "checkout", "a change to one copy leaves the other as it was")
        #expect(meta == ActionMeta(traceparent: copy.traceparent, correlationId: "order-17", causationId: "41", source: "changed"))
        #expect(meta != copy)
        #expect(Set([meta, copy, Self.meta]).count == 2)
    }

    @Test func aMetaWithoutMembersIsNoMeta() throws {
        let empty = Self.envelope(meta: ActionMeta())
        #expect(empty.meta == nil)
        #expect(EnvelopeCodec.encode(empty) == EnvelopeCodec.encode(Self.envelope()))
    }

    @Test func aLongExeIsCutAtItsLimit() throws {
        let long = "/" + String(repeating: "é", count: 3000)  // 6001 bytes
        let envelope = Self.envelope(exe: long)
        let exe = try #require(envelope.peer.exe)
        #expect(exe.utf8.count <= Peer.maxExeLength)
        #expect(exe.utf8.count >= Peer.maxExeLength - 1)
        #expect(long.hasPrefix(exe))
        #expect(try decode(EnvelopeCodec.encode(envelope)).peer.exe == exe)
    }

    /// Bytes as the encoder before meta and exe wrote them, field by field: version 2, time 5,
    /// uid 1000, gid 100, pid 4242, type "set", flags, [key "k-1"], payload {"n": 1}, checksum.
    static func oldRecord(withKey: Bool, seq: UInt64 = 7) -> [UInt8] {
        var bytes: [UInt8] = [0x02, 0x0A, 0xE8, 0x07, 0x64, 0xA4, 0x42, 0x03] + Array("set".utf8)
        bytes += withKey ? [0x01, 0x03] + Array("k-1".utf8) : [0x00]
        bytes += [0x07, 0x01, 0x01, UInt8(ascii: "n"), 0x03, 0x02]
        RecordChecksum.seal(&bytes, seed: seq)
        return bytes
    }

    @Test func recordsWrittenBeforeStillReadUnchanged() throws {
        for withKey in [false, true] {
            let old = Self.oldRecord(withKey: withKey)
            let expected = Self.envelope(key: withKey ? "k-1" : nil)
            let decoded = try decode(old)
            #expect(decoded == expected)
            #expect(decoded.meta == nil)
            #expect(decoded.peer.exe == nil)
            // An action without meta or exe is still written exactly as before.
            #expect(EnvelopeCodec.encode(expected) == old)
        }
    }

    /// The flags byte of ``oldRecord(withKey:seq:)`` and of the records built on it.
    static let flagsOffset = 11

    @Test func unknownFlagBitsAreDamage() throws {
        for flag in [UInt8(1 << 3), 1 << 4, 1 << 7, 0xFF] {
            var bytes = Array(Self.oldRecord(withKey: false).dropLast(RecordChecksum.byteCount))
            bytes[Self.flagsOffset] = flag
            RecordChecksum.seal(&bytes, seed: 7)
            #expect {
                try decode(bytes)
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.code == .corrupt && error.message.contains("action 7") && error.message.contains("flags")
            }
        }
    }

    @Test func unknownOrNoMetaMembersAreDamage() throws {
        // Flags: meta follows; then the members byte.
        let unknownMembers: [UInt8] = [0, 1 << 4, 0xF1]
        for present in unknownMembers {
            var bytes = Array(Self.oldRecord(withKey: false).dropLast(RecordChecksum.byteCount))
            bytes[Self.flagsOffset] = 0b010
            let meta: [UInt8] = [present, 0x01, UInt8(ascii: "x")]
            bytes.insert(contentsOf: meta, at: Self.flagsOffset + 1)
            RecordChecksum.seal(&bytes, seed: 7)
            #expect {
                try decode(bytes)
            } throws: { error in
                (error as? StorageError)?.code == .corrupt && (error as? StorageError)?.message.contains("meta") == true
            }
        }
        // The same layout with a known member reads.
        var bytes = Array(Self.oldRecord(withKey: false).dropLast(RecordChecksum.byteCount))
        bytes[Self.flagsOffset] = 0b010
        let known: [UInt8] = [0b0100, 0x01, UInt8(ascii: "x")]
        bytes.insert(contentsOf: known, at: Self.flagsOffset + 1)
        RecordChecksum.seal(&bytes, seed: 7)
        #expect(try decode(bytes).meta == ActionMeta(source: "x"))
    }

    @Test func aRecordCutInsideItsMetaOrExeIsDamage() throws {
        let sealed = EnvelopeCodec.encode(Self.envelope(key: "k", meta: Self.meta, exe: "/bin/app"))
        let body = Array(sealed.dropLast(RecordChecksum.byteCount))
        for cut in stride(from: Self.flagsOffset + 1, to: body.count, by: 7) {
            var bytes = Array(body.prefix(cut))
            RecordChecksum.seal(&bytes, seed: 7)
            #expect(throws: StorageError.self) { try decode(bytes) }
        }
    }
}
