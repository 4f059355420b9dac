import ReelCore
import ReelJSON
@testable import ReelStorage
import ReelTestSupport
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

    /// A stock action read prepared without its envelope is the one the full decoding prepares;
    /// every record it does not take, the full decoding reads.
    @Test func aStockActionReadWithoutItsEnvelopeIsTheOneTheDecodingPrepares() throws {
        func action(_ type: String, _ payload: JSONValue, version: Int? = nil, key: String? = nil, meta: ActionMeta? = nil, exe: String? = nil) -> ActionEnvelope {
            ActionEnvelope(
                seq: 9, action: Action(type: type, payload: payload, version: version), time: Timestamp(nanosecondsSince1970: 5),
                peer: Peer(uid: 1, gid: 2, pid: 3, exe: exe), idempotencyKey: key, meta: meta
            )
        }
        let taken = [
            action("patch", [["op": "add", "path": "/k1", "value": 1], ["op": "remove", "path": "/k0"]]),
            action("set", ["path": "/a/b", "value": ["x": [true, nil]]], meta: Self.meta, exe: "/usr/bin/app"),
            action("increment", ["path": "/n"], exe: "/bin/sh"),
            action("increment", ["by": 2.5, "path": "/n"], meta: ActionMeta(source: "cron")),
        ]
        for envelope in taken {
            let record = EnvelopeCodec.encode(envelope)
            let read = record.withUnsafeBytes { EnvelopeCodec.preparedStockAction(seq: 9, from: $0) }
            var prepared: PreparedStockAction?
            _ = try record.withUnsafeBytes { try EnvelopeCodec.decode(seq: 9, from: $0, acceptingLegacy: false, preparing: true, into: &prepared) }
            #expect(read != nil, "\(envelope)")
            #expect(read == prepared, "\(envelope)")
        }
        var damaged = EnvelopeCodec.encode(taken[0])
        damaged[damaged.count / 2] ^= 0x10
        let left = [
            EnvelopeCodec.encode(action("merge", ["a": 1])), EnvelopeCodec.encode(action("@revert", ["to": 1])),
            EnvelopeCodec.encode(action("set", ["path": "/a", "value": 1], version: 2)),
            EnvelopeCodec.encode(action("set", ["path": "/a", "value": 1], key: "retry-1")),
            EnvelopeCodec.encode(action("set", ["path": "a", "value": 1])), EnvelopeCodec.encode(action("patch", [["op": "jump"]])),
            damaged,
        ]
        for record in left {
            #expect(record.withUnsafeBytes { EnvelopeCodec.preparedStockAction(seq: 9, from: $0) } == nil)
        }
        // Under another seq the checksum does not match: damage, never an action.
        #expect(EnvelopeCodec.encode(taken[0]).withUnsafeBytes { EnvelopeCodec.preparedStockAction(seq: 10, from: $0) } == nil)
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
        for flag in [UInt8(1 << 4), 1 << 5, 1 << 7, 0xFF] {
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

/// The version of a logged action's payload (flags bit 3), and the catalog of the (type,
/// version) pairs a log holds.
struct VersionedRecordTests {
    static func envelope(seq: UInt64, type: String = "set", version: Int? = nil, key: String? = nil, exe: String? = nil) -> ActionEnvelope {
        ActionEnvelope(
            seq: seq, action: Action(type: type, payload: ["n": .int(Int64(seq))], version: version), time: Timestamp(nanosecondsSince1970: 5),
            peer: Peer(uid: 1, gid: 2, pid: 3, exe: exe), idempotencyKey: key,
            meta: key == nil ? nil : ActionMeta(correlationId: "c", source: "s")
        )
    }

    @Test func aVersionRoundTripsAndVersionOneIsWrittenAsBefore() throws {
        for original in [Self.envelope(seq: 3, version: 2), Self.envelope(seq: 4, version: 300, key: "k", exe: "/bin/x")] {
            let bytes = EnvelopeCodec.encode(original)
            let decoded = try bytes.withUnsafeBytes { try EnvelopeCodec.decode(seq: original.seq, from: $0) }
            #expect(decoded == original)
            #expect(decoded.version == original.version)
            let header = bytes.withUnsafeBytes { EnvelopeCodec.typeAndVersion(of: $0) }
            #expect(header?.type == "set")
            #expect(header?.version == original.version)
        }
        // Version 1, named or not, is the record without a version.
        #expect(EnvelopeCodec.encode(Self.envelope(seq: 5, version: 1)) == EnvelopeCodec.encode(Self.envelope(seq: 5)))
        let plain = EnvelopeCodec.encode(Self.envelope(seq: 5, key: "k", exe: "/e"))
        #expect(plain.withUnsafeBytes { EnvelopeCodec.typeAndVersion(of: $0) }?.version == 1)
    }

    @Test func aStoredVersionBelowTwoIsDamage() throws {
        // A record with the version flag and version 1 is not one this build writes.
        var bytes = Array(EnvelopeCodec.encode(Self.envelope(seq: 7, version: 2)).dropLast(RecordChecksum.byteCount))
        let unversioned = EnvelopeCodec.encode(Self.envelope(seq: 7))
        let flags = try #require(bytes.indices.first { bytes[$0] != unversioned[$0] })
        #expect(bytes[flags] == EnvelopeCodec.hasVersion)
        #expect(bytes[flags + 1] == 2)
        bytes[flags + 1] = 1
        RecordChecksum.seal(&bytes, seed: 7)
        #expect {
            try bytes.withUnsafeBytes { try EnvelopeCodec.decode(seq: 7, from: $0) }
        } throws: { error in
            (error as? StorageError)?.code == .corrupt && "\(error)".contains("version 1")
        }
    }

    @Test func theCatalogListsEachTypeAndVersionWithItsFirstSeqAcrossReopens() throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try DataDirectory(path: directory.path, reducerName: "r", options: .init(durable: false))
            try store.commit(CommitBatch(envelopes: [Self.envelope(seq: 1), Self.envelope(seq: 2, type: "note", version: 2), Self.envelope(seq: 3)]))
            try store.commit(CommitBatch(envelopes: [Self.envelope(seq: 4, type: "note", version: 3), Self.envelope(seq: 5, type: "note", version: 2)]))
            #expect(try store.storedActionTypes() == [
                StoredActionType(type: "note", version: 2, firstSeq: 2), StoredActionType(type: "note", version: 3, firstSeq: 4),
                StoredActionType(type: "set", version: 1, firstSeq: 1),
            ])
        }
        let reopened = try DataDirectory(path: directory.path, reducerName: "r", options: .init(readOnly: true))
        #expect(try reopened.storedActionTypes().map(\.firstSeq) == [2, 4, 1])
    }

    @Test func aDirectoryWithoutACatalogHasItsLogReadOnceToMakeOne() throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try DataDirectory(path: directory.path, reducerName: "r", options: .init(durable: false))
            try store.commit(CommitBatch(envelopes: (1...40).map { Self.envelope(seq: $0, type: $0 % 10 == 0 ? "tick" : "set") }))
            // As a build from before catalogs leaves it: no `types` key in meta, nothing in `types`.
            try store.env.write { txn in
                _ = try txn.delete(TypeCatalog.completeKey, in: store.meta)
                try txn.clear(store.types!.db)
            }
        }
        do {
            let readOnly = try DataDirectory(path: directory.path, reducerName: "r", options: .init(readOnly: true))
            #expect(readOnly.types == nil)
            #expect(try readOnly.storedActionTypes() == [StoredActionType(type: "set", version: 1, firstSeq: 1), StoredActionType(type: "tick", version: 1, firstSeq: 10)])
        }
        let writable = try DataDirectory(path: directory.path, reducerName: "r", options: .init(durable: false))
        #expect(writable.types != nil)
        #expect(try writable.storedActionTypes().count == 2)
    }
}
