import NIOCore
import ReelCore
import ReelFraming
import ReelJSON
import ReelProtocol
import ReelServer
import ReelStorage

/// Everything Reel parses from bytes it does not control, as functions of one input that must
/// never crash, hang or break an invariant (a broken invariant traps, which the fuzzer reports as
/// a crash).
///
/// libFuzzer drives them through `Tools/Fuzz` (`Tools/Fuzz/run`); `swift test` replays every
/// seed and every input that ever crashed (`Tools/Fuzz/corpus`) through the same functions.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The line framer (``LineFramer``, the rules of the server's framing handler): bytes in
    /// arbitrary chunks → lines no longer than the limit, without a newline, the same whatever the
    /// chunking.
    case framer
    /// JSON-RPC request handling: one line → a request → a typed call, whose params read back to
    /// the same call; and what the fast read of a plain dispatch (``DispatchLine``) accepts, the
    /// general path reads the same.
    case request
    /// The JSON parser: anything it accepts serializes and parses back to the same value, and
    /// survives the binary encoding; what the fast read of an exported action
    /// (``LoggedActionLine``) accepts, the general path reads the same; and what the transcoding
    /// to the binary encoding (``JSONShapeReader/readBinaryValue(into:)``) accepts, it writes as the
    /// parsed value's encoding.
    case json
    /// JSON Patch: a document and a patch (separated by the first newline); applying is atomic.
    case patch
    /// Merge patch: a document and a patch (separated by the first newline).
    case merge
    /// The stored action record decoder (with and without format-1 records allowed).
    case envelope
    /// The stored checkpoint decoder and the binary JSON of its state.
    case checkpoint
    /// The `bisect` condition language.
    case condition
    /// The journal reader: records built valid from the input, then its bytes as they are, one
    /// maybe flipped; the groups read continue LMDB's log without a gap, or the file is refused.
    case journal

    /// Runs the target on one input.
    public func run(_ input: UnsafeRawBufferPointer) {
        switch self {
        case .framer: Self.framer(input)
        case .request: Self.request(input)
        case .json: Self.json(input)
        case .patch: Self.patch(input, merge: false)
        case .merge: Self.patch(input, merge: true)
        case .envelope: Self.envelope(input)
        case .checkpoint: Self.checkpoint(input)
        case .condition: Self.condition(input)
        case .journal: Self.journal(input)
        }
    }

    /// Traps with `message` unless `condition` holds: an invariant, not an input check.
    static func require(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz invariant broken: \(message())") }
    }

    static func framer(_ input: UnsafeRawBufferPointer) {
        let limit = 256
        // The first byte picks the chunk size, so splits at every position get explored.
        let chunk = 1 + Int(input.first ?? 0) % 97
        let body = input.isEmpty ? input : UnsafeRawBufferPointer(rebasing: input[1...])
        let chunked = frame(body, chunk: chunk, limit: limit)
        for line in chunked.lines {
            require(line.count <= limit, "a line of \(line.count) bytes passed a limit of \(limit)")
            require(!line.contains(UInt8(ascii: "\n")), "a framed line holds a newline")
        }
        // Chunking must not change what is framed.
        let whole = frame(body, chunk: max(body.count, 1), limit: limit)
        require(whole.lines == chunked.lines && whole.refused == chunked.refused,
                "chunks of \(chunk) bytes framed other lines than the whole input")
    }

    /// Feeds `input` to a fresh framer in chunks; the lines it passed on, and whether it refused a line.
    static func frame(_ input: UnsafeRawBufferPointer, chunk: Int, limit: Int) -> (lines: [[UInt8]], refused: Bool) {
        var framer = LineFramer(maxLineLength: limit)
        var lines: [[UInt8]] = []
        var offset = 0
        while offset < input.count {
            let end = min(input.count, offset + chunk)
            var bytes = ByteBuffer(bytes: input[offset..<end])
            let read = framer.read(&bytes)
            // Lines passed on before a refusal count too.
            lines += read.lines.map { Array($0.readableBytesView) }
            if read.refused { return (lines, true) }
            offset = end
        }
        return (lines, false)
    }

    static func request(_ input: UnsafeRawBufferPointer) {
        let parsed = RPCRequest.parse(input)
        if let fast = DispatchLine.read(input) {
            // The fast read of a plain dispatch must read what the general path reads.
            guard case .success(let request) = parsed, let params = (try? RPCCall(request))?.params(as: Method.Dispatch.self) else {
                fatalError("fuzz invariant broken: the fast path read a dispatch the general path refuses")
            }
            require(request.id == fast.id && params == fast.params, "the fast path read \(fast) where the general path read \(request)")
        }
        guard case .success(let request) = parsed, let call = try? RPCCall(request) else { return }
        let again = try? RPCCall(call.request(id: .int(1)))
        require(again == call, "\(call) does not read back from the request it makes")
    }

    static func json(_ input: UnsafeRawBufferPointer) {
        let value = try? JSONValue(parsing: input)
        if let fast = LoggedActionLine.read(input) {
            // The fast read of an exported action must read what the general path reads.
            let general = value.flatMap { try? ActionEnvelope(wire: $0) }
            require(general == fast, "the fast path read \(fast) where the general path read \(String(describing: general))")
        }
        var payload: [UInt8] = []
        if let envelope = LoggedActionLine.read(input, encodingPayloadInto: &payload) {
            let general = value.flatMap { try? ActionEnvelope(wire: $0) }
            require(general.map { $0.payload.binaryEncoded() } == payload, "the payload transcoded is not the general path's encoding")
            var read = envelope
            read.action.payload = general?.payload ?? .null
            require(general == read, "the transcoding read \(envelope) where the general path read \(String(describing: general))")
        }
        let transcoded = JSONShapeReader.read(input) { reader -> [UInt8]? in
            var bytes: [UInt8] = []
            guard reader.readBinaryValue(into: &bytes), reader.isAtEnd() else { return nil }
            return bytes
        }
        if let transcoded {
            require(value?.binaryEncoded() == transcoded, "the transcoding of a document is not its value's encoding")
        }
        guard let value else { return }
        let text = value.jsonString
        require(!text.utf8.contains(UInt8(ascii: "\n")), "serialized JSON holds a raw newline")
        let reparsed = try? JSONValue(parsing: text)
        require(reparsed == value, "\(text) does not parse back to the value it was written from")
        let binary = try? JSONValue(binary: value.binaryEncoded())
        require(binary == value, "the binary encoding of \(text) does not decode to it")
    }

    static func patch(_ input: UnsafeRawBufferPointer, merge: Bool) {
        let newline = input.firstIndex(of: UInt8(ascii: "\n")) ?? input.count
        guard let document = try? JSONValue(parsing: UnsafeRawBufferPointer(rebasing: input[..<newline])),
            newline < input.count,
            let patchJSON = try? JSONValue(parsing: UnsafeRawBufferPointer(rebasing: input[(newline + 1)...]))
        else { return }
        var target = document
        if merge {
            JSONMergePatch.apply(patchJSON, to: &target)
            require((try? JSONValue(parsing: target.jsonString)) == target, "a merge result does not round-trip")
            return
        }
        guard let patch = try? JSONPatch(patchJSON) else { return }
        do {
            // The daemon's copy limit scaled down a hundredfold: the limit's logic is the same, and
            // results of a million values would slow the fuzzer a thousandfold.
            try patch.apply(to: &target, copyLimit: 10_000)
            guard target.valueCount(upTo: 10_001) <= 10_000 else { return }
            require((try? JSONValue(parsing: target.jsonString)) == target, "a patch result does not round-trip")
        } catch {
            require(target == document, "a failed patch changed the document")
        }
    }

    /// Inputs are tried as stored (which almost always fails the checksum) and with a valid
    /// checksum appended, so the fuzzer reaches the field decoding behind the check.
    static func sealedVariants(_ input: UnsafeRawBufferPointer) -> [[UInt8]] {
        var sealed = Array(input)
        RecordChecksum.seal(&sealed, seed: 42)
        return [Array(input), sealed]
    }

    static func envelope(_ input: UnsafeRawBufferPointer) {
        for bytes in sealedVariants(input) {
            for legacy in [false, true] {
                let decoded = bytes.withUnsafeBytes { try? EnvelopeCodec.decode(seq: 42, from: $0, acceptingLegacy: legacy) }
                guard let decoded else { continue }
                let encoded = EnvelopeCodec.encode(decoded)
                let again = encoded.withUnsafeBytes { try? EnvelopeCodec.decode(seq: 42, from: $0) }
                require(again == decoded, "a decoded action does not survive encoding: \(decoded) became \(String(describing: again))")
                // Read for a replay, a stock action of a plain shape is the action decoded.
                var prepared: PreparedStockAction?
                let read = bytes.withUnsafeBytes {
                    try? EnvelopeCodec.decode(seq: 42, from: $0, acceptingLegacy: legacy, preparing: true, into: &prepared)
                }
                if let read, let prepared {
                    require(
                        read.action.payload == .null && read.seq == decoded.seq && read.action.type == decoded.action.type
                            && read.time == decoded.time && read.peer == decoded.peer && read.meta == decoded.meta,
                        "a prepared action's envelope differs from the decoded one: \(read) against \(decoded)"
                    )
                    require(
                        PreparedStockAction(type: decoded.action.type, payload: decoded.payload) == prepared,
                        "a prepared action differs from the payload decoded: \(prepared) against \(decoded.payload)"
                    )
                } else {
                    require(read == decoded, "a record decoded differs when read for a replay")
                }
            }
        }
    }

    static func checkpoint(_ input: UnsafeRawBufferPointer) {
        for bytes in sealedVariants(input) {
            for legacy in [false, true] {
                let decoded = bytes.withUnsafeBytes { try? CheckpointCodec.decode(seq: 42, from: $0, acceptingLegacy: legacy) }
                _ = try? decoded?.state(checkingHash: false)
            }
        }
        _ = try? JSONValue(binary: input)
    }

    static func condition(_ input: UnsafeRawBufferPointer) {
        guard let text = String(validating: input, as: UTF8.self), let condition = try? JSONCondition(parsing: text) else { return }
        let document: JSONValue = ["character": ["hp": 3, "name": "Hero", "items": ["sword", 2.5, nil, true]], "n": -1]
        _ = condition.holds(in: document)
        _ = condition.holds(in: .null)
    }

    static func journal(_ input: UnsafeRawBufferPointer) {
        guard input.count >= 4 else { return }
        let applied = UInt64(input[0] % 8)
        let groupCount = Int(input[1] % 5)
        let start = UInt64(input[2] % 6) + 1  // before, at or after applied + 1
        let flip = input[3]  // 0: no flip; else the flipped byte's place, as a share of the file
        var rest = input.dropFirst(4)[...]
        var file: [UInt8] = []
        var seq = start
        for _ in 0..<groupCount {
            // Each group: 1 to 3 records of up to 15 bytes, cut from the input.
            let count = 1 + Int((rest.first ?? 0) % 3)
            var records: [[UInt8]] = []
            for _ in 0..<count {
                let size = min(rest.count, Int((rest.first ?? 0) % 16))
                records.append(Array(rest.prefix(size)))
                rest = rest.dropFirst(size == 0 ? 1 : size)
            }
            file += JournalFormat.encode(JournalGroup(firstSeq: seq, records: records, dedup: []))
            seq += UInt64(count)
        }
        let built = file.count
        file += rest
        if flip != 0, !file.isEmpty {
            file[Int(flip) * (file.count - 1) / 255] ^= 0x20
        }
        let groups: [JournalGroup]
        do {
            groups = try JournalFormat.unappliedGroups(in: file, after: applied, path: "fuzz")
        } catch {
            require(error.code == .corrupt, "the journal reader failed with \(error.code), not corrupt")
            return
        }
        var expected = applied + 1
        for group in groups {
            require(group.firstSeq == expected && !group.records.isEmpty, "groups read do not continue the log at \(expected)")
            expected = group.lastSeq + 1
            let again = JournalFormat.encode(group).withUnsafeBytes { JournalFormat.record(in: $0, at: 0) }
            require(again?.group.records == group.records && again?.group.firstSeq == group.firstSeq, "a group read does not survive encoding")
        }
        // Records written without damage or anything after them are read whole, past `applied`.
        if flip == 0, file.count == built, start <= applied + 1 {
            require(expected == max(seq, applied + 1), "an intact journal read up to \(expected - 1), not \(seq - 1)")
        }
    }
}
