import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// The fast read of an exported action agrees with the general path (``JSONValue`` then
/// ``ActionEnvelope/init(wire:)``) on every line it accepts, and accepts what the export writes.
struct LoggedActionLineTests {
    /// What the general path makes of a line, when it reads it.
    static func general(_ line: String) -> ActionEnvelope? {
        guard let json = try? JSONValue(parsing: line) else { return nil }
        return try? ActionEnvelope(wire: json)
    }

    static func fast(_ line: String) -> ActionEnvelope? {
        Array(line.utf8).withUnsafeBytes { LoggedActionLine.read($0) }
    }

    static func written(_ envelope: ActionEnvelope) -> String {
        var bytes: [UInt8] = []
        envelope.writeWire(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The line read with its payload written as the log's binary encoding, the envelope given
    /// the payload that encoding holds.
    static func encoding(_ line: String) -> (envelope: ActionEnvelope, payload: [UInt8])? {
        // A buffer that held another payload before: it is replaced.
        var payload: [UInt8] = [9, 9, 9]
        guard let envelope = Array(line.utf8).withUnsafeBytes({ LoggedActionLine.read($0, encodingPayloadInto: &payload) }) else {
            return nil
        }
        #expect(envelope.payload == .null)
        var read = envelope
        read.action.payload = (try? JSONValue(binary: payload)) ?? "not a payload"
        return (read, payload)
    }

    /// Fails unless the fast paths answer `nil` or exactly what the general path answers.
    static func expectAgreement(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if let fast = fast(line) {
            #expect(general(line) == fast, "\(line)", sourceLocation: sourceLocation)
        }
        if let (envelope, payload) = encoding(line) {
            let general = general(line)
            #expect(general == envelope, "\(line)", sourceLocation: sourceLocation)
            #expect(general?.payload.binaryEncoded() == payload, "\(line)", sourceLocation: sourceLocation)
        }
        #expect((fast(line) == nil) == (encoding(line) == nil), "\(line)", sourceLocation: sourceLocation)
    }

    static let envelopes = [
        ActionEnvelope(
            seq: 1, action: Action(type: "patch", payload: [["op": "add", "path": "/k1", "value": 1]]),
            time: Timestamp(nanosecondsSince1970: 1_700_000_000_123_456_789), peer: Peer(uid: 1, gid: 2, pid: 3)
        ),
        ActionEnvelope(
            seq: 42, action: Action(type: "set", payload: ["path": "/a", "value": "é\n\u{1F600}"], version: 3),
            time: Timestamp(nanosecondsSince1970: -5), peer: Peer(uid: 0, gid: 0, pid: -1, exe: "/usr/bin/app \"x\""),
            meta: ActionMeta(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", correlationId: "c-1",
                             causationId: "41", source: "Cart.swift:12")
        ),
        ActionEnvelope(seq: 7, action: Action(type: "reset"), time: Timestamp(nanosecondsSince1970: 0), peer: Peer(uid: 4_000_000_000, gid: 5, pid: 6)),
        ActionEnvelope(
            seq: 9_007_199_254_740_993, action: Action(type: "@revert", payload: ["to": 3]),
            time: Timestamp(nanosecondsSince1970: 9_000_000_000_000_000_000), peer: Peer(uid: 1, gid: 1, pid: 1)
        ),
    ]

    @Test(arguments: envelopes)
    func readsWhatTheExportWrites(envelope: ActionEnvelope) throws {
        let line = Self.written(envelope)
        #expect(Self.fast(line) == envelope)
        #expect(Self.general(line) == envelope)
        let encoding = try #require(Self.encoding(line))
        #expect(encoding.envelope == envelope)
        #expect(encoding.payload == envelope.payload.binaryEncoded())
    }

    @Test(arguments: [
        #"{"seq":3,"type":"patch","payload":[{"op":"add","path":"/k3","value":3}],"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        // Members in any order, whitespace, a time with an offset or without a fraction.
        " { \"peer\" : { \"pid\" : 9 , \"gid\" : 8, \"uid\" : 7, \"exe\": null } ,\n\"time\":\"2026-01-02T03:04:05+01:00\",\t\"type\":\"x\",\"seq\":1 }\r\n",
        #"{"seq":2,"type":"x","payload":null,"time":"2026-01-02t03:04:05z","peer":{"uid":1,"gid":1,"pid":1},"version":1}"#,
        #"{"seq":2.0,"type":"x","time":"2026-01-02T03:04:05.5Z","peer":{"uid":1,"gid":1,"pid":1},"meta":null}"#,
        #"{"seq":2,"type":"\u0073et","payload":"caf\u00e9 \ud83d\ude00","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1},"meta":{"correlationId":"a","source":"b"}}"#,
    ])
    func readsPlainLinesAsTheGeneralPathDoes(line: String) throws {
        let fast = try #require(Self.fast(line))
        #expect(fast == Self.general(line))
        Self.expectAgreement(line)
    }

    @Test(arguments: [
        // Unknown or repeated members and escaped keys are the general path's, which reads them.
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1},"extra":1}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1,"extra":1}}"#,
        #"{"seq":2,"seq":3,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"uid":2,"gid":1,"pid":1}}"#,
        #"{"s\u0065q":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05\u005a","peer":{"uid":1,"gid":1,"pid":1}}"#,
        // What the general path refuses, with its reason.
        #"{"seq":0,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-02-30T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":-1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1,"exe":7}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1},"version":0}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1},"meta":{"causationId":7}}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z"}"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}} x"#,
        #"{"seq":2,"type":"x","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1},}"#,
        #"{"seq":2,"type":"x","payload":01,"time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#,
        #"{"seq":2,"type":"x","payload":"a"#,
        "",
        "[]",
    ])
    func leavesEverythingElseToTheGeneralPath(line: String) {
        #expect(Self.fast(line) == nil)
        #expect(Self.encoding(line) == nil)
    }

    @Test func refusesWhatNestsDeeperThanTheLimitAsTheGeneralPathDoes() throws {
        let deep = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        let line = #"{"seq":2,"type":"x","payload":"# + deep + #","time":"2026-01-02T03:04:05Z","peer":{"uid":1,"gid":1,"pid":1}}"#
        #expect(Array(line.utf8).withUnsafeBytes { LoggedActionLine.read($0, maxDepth: 11) } != nil)
        #expect(Array(line.utf8).withUnsafeBytes { LoggedActionLine.read($0, maxDepth: 10) } == nil)
        #expect((try? JSONValue(parsing: line, maxDepth: 11)) != nil)
        #expect((try? JSONValue(parsing: line, maxDepth: 10)) == nil)
    }

    /// Lines one edit away from exported actions: whatever the fast path accepts, the general
    /// path reads the same.
    @Test func agreesWithTheGeneralPathOnEditedLines() {
        let seeds = Self.envelopes.map(Self.written)
        let alphabet = Array(#"{}[]":,\ 0129-.eEtrufalsnTZ+"#.utf8) + [0x0A, 0xC3, 0xA9, 0x00, 0x7F]
        var accepted = 0
        for seed in seeds {
            for edited in linesOneEditAway(from: seed, alphabet: alphabet, count: 3_000) {
                guard String(validating: edited, as: UTF8.self) != nil else {
                    // Invalid UTF-8: neither path may accept it.
                    #expect(edited.withUnsafeBytes { LoggedActionLine.read($0) } == nil)
                    continue
                }
                let line = String(decoding: edited, as: UTF8.self)
                if Self.fast(line) != nil { accepted += 1 }
                Self.expectAgreement(line)
            }
        }
        #expect(accepted > 0)
    }
}
