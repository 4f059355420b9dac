import ReelCore
import ReelJSON

/// A logged action read the fast way: one line of `reel export` (the shape
/// ``ActionEnvelope/writeWire(into:)`` writes) straight into an ``ActionEnvelope``, without the
/// line's object, its peer and its time becoming a dictionary and strings first. `reel import`
/// reads a million lines a second or more; through ``JSONValue/init(parsing:maxDepth:)`` and
/// ``ActionEnvelope/init(wire:)``, building and dropping those was half of a line's time.
///
/// Only the plain form is read: `seq`, `type`, `payload`, `time`, `peer` (`uid`, `gid`, `pid`,
/// `exe`), `meta` and `version`, each once, and nothing else. Anything else — a repeated or unknown
/// member, a key with escapes, a time that is not plain ASCII, a value the general path would
/// refuse — answers `nil`, and the caller takes the general path, which reads it or explains what
/// is wrong. What this reads, it reads as the general path does (`LoggedActionLineTests` holds the
/// two to that).
public enum LoggedActionLine {
    /// The action on `line`, or `nil` for any line but the plain form.
    ///
    /// - Parameters:
    ///   - line: One exported action (a trailing newline is whitespace).
    ///   - maxDepth: As ``JSONValue/init(parsing:maxDepth:)``'s.
    public static func read(_ line: UnsafeRawBufferPointer, maxDepth: Int = 512) -> ActionEnvelope? {
        var payload: JSONValue?
        let read = read(line, maxDepth: maxDepth) { reader in
            payload = reader.readValue()
            return payload != nil
        }
        guard var envelope = read else { return nil }
        envelope.action.payload = payload ?? .null
        return envelope
    }

    /// The action on `line`, its payload written into `payload` in Reel's binary encoding, as
    /// the log stores it (``BinaryWriter/writeJSON(_:)``), and the envelope's payload left `null`:
    /// a plain payload (``JSONShapeReader/readBinaryValue(into:)``) never becomes a tree of
    /// values. `nil` for any line but the plain form, as ``read(_:maxDepth:)``; `payload` is
    /// replaced either way (a buffer reused from line to line allocates only when it grows).
    public static func read(_ line: UnsafeRawBufferPointer, maxDepth: Int = 512, encodingPayloadInto payload: inout [UInt8]) -> ActionEnvelope? {
        payload.removeAll(keepingCapacity: true)
        var found = false
        let read = read(line, maxDepth: maxDepth) { reader in
            // (A repeated `payload` is refused before its value is read.)
            found = true
            if reader.readBinaryValue(into: &payload) { return true }
            guard let value = reader.readValue() else { return false }
            payload = value.binaryEncoded()
            return true
        }
        guard let read else { return nil }
        if !found { payload = JSONValue.null.binaryEncoded() }
        return read
    }

    /// The line read with `readPayload` reading the payload's value (answering `false` to refuse
    /// the line); the envelope's payload `null`. Not generic: a generic result (a tuple with an
    /// optional payload) looked its metadata up at every line. Inlined into both callers, with
    /// their payload's reading.
    @inline(__always)
    private static func read(
        _ line: UnsafeRawBufferPointer, maxDepth: Int, payload readPayload: (inout JSONShapeReader) -> Bool
    ) -> ActionEnvelope? {
        JSONShapeReader.read(line, maxDepth: maxDepth) { reader -> ActionEnvelope? in
            var seq: Int64?
            var type: String?
            var payloadRead = false
            var time: Timestamp?
            var peer: Peer?
            var meta: JSONValue?
            var version: JSONValue?
            let read = reader.readObject { reader, key in
                if JSONShapeReader.key(key, is: "seq") {
                    guard seq == nil, let value = readInteger(&reader), value >= 1 else { return false }
                    seq = value
                } else if JSONShapeReader.key(key, is: "type") {
                    guard type == nil, let name = readString(&reader), !name.isEmpty else { return false }
                    type = name
                } else if JSONShapeReader.key(key, is: "payload") {
                    guard !payloadRead, readPayload(&reader) else { return false }
                    payloadRead = true
                } else if JSONShapeReader.key(key, is: "time") {
                    guard time == nil, let value = reader.readPlainString({ Timestamp(rfc3339: $0) }) else { return false }
                    time = value
                } else if JSONShapeReader.key(key, is: "peer") {
                    guard peer == nil, let value = readPeer(&reader) else { return false }
                    peer = value
                } else if JSONShapeReader.key(key, is: "meta") {
                    guard meta == nil, let value = reader.readValue() else { return false }
                    meta = value
                } else if JSONShapeReader.key(key, is: "version") {
                    guard version == nil, let value = reader.readValue() else { return false }
                    version = value
                } else {
                    return false
                }
                return true
            }
            guard read, reader.isAtEnd(), let seq, let type, let time, let peer else { return nil }
            var stated: Int?
            if let version {
                guard let number = actionVersion(version) else { return nil }
                stated = number == 1 ? nil : number
            }
            // Checked as the general path checks it, which words the refusal.
            let checked: ActionMeta?
            do { checked = try ActionMeta(wire: meta, seq: seq) } catch { return nil }
            return ActionEnvelope(seq: UInt64(seq), action: Action(type: type, version: stated), time: time, peer: peer, meta: checked)
        }
    }

    /// A string as `readValue()` reads it, a plain one (printable ASCII, no escapes) without the
    /// value between.
    private static func readString(_ reader: inout JSONShapeReader) -> String? {
        if let plain = reader.readPlainString({ String(decoding: $0, as: UTF8.self) }) { return plain }
        guard case .string(let value)? = reader.readValue() else { return nil }
        return value
    }

    /// An integer as `readValue()?.intValue` reads it, a plain one without the value between.
    private static func readInteger(_ reader: inout JSONShapeReader) -> Int64? {
        reader.readInteger() ?? reader.readValue()?.intValue
    }

    private static func readPeer(_ reader: inout JSONShapeReader) -> Peer? {
        var uid: UInt32?
        var gid: UInt32?
        var pid: Int32?
        var exe: String??
        let read = reader.readObject { reader, key in
            if JSONShapeReader.key(key, is: "uid") {
                guard uid == nil, let value = readInteger(&reader).flatMap(UInt32.init(exactly:)) else { return false }
                uid = value
            } else if JSONShapeReader.key(key, is: "gid") {
                guard gid == nil, let value = readInteger(&reader).flatMap(UInt32.init(exactly:)) else { return false }
                gid = value
            } else if JSONShapeReader.key(key, is: "pid") {
                guard pid == nil, let value = readInteger(&reader).flatMap(Int32.init(exactly:)) else { return false }
                pid = value
            } else if JSONShapeReader.key(key, is: "exe") {
                guard exe == nil else { return false }
                if let path = reader.readPlainString({ String(decoding: $0, as: UTF8.self) }) {
                    exe = path
                    return true
                }
                switch reader.readValue() {
                case .null?: exe = .some(nil)
                case .string(let path)?: exe = path
                default: return false
                }
            } else {
                return false
            }
            return true
        }
        guard read, let uid, let gid, let pid else { return nil }
        return Peer(uid: uid, gid: gid, pid: pid, exe: exe ?? nil)
    }
}
