import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// The exact bytes the server sends for each method: the wire contract as fixtures. A change
/// here is a change every client sees.
struct GoldenFrameTests {
    static let envelope = ActionEnvelope(
        seq: 7, action: Action(type: "set", payload: ["path": "/a", "value": 1]),
        time: Timestamp(nanosecondsSince1970: 1_795_273_445_123_456_789),
        peer: Peer(uid: 1000, gid: 100, pid: 4242), idempotencyKey: "k-1"
    )
    static let unknownPeerEnvelope = ActionEnvelope(
        seq: 8, action: Action(type: "@revert", payload: ["to": 3]),
        time: Timestamp(nanosecondsSince1970: -1), peer: .unknown
    )
    static let noPayloadEnvelope = ActionEnvelope(
        seq: 9, action: Action(type: "reset"), time: Timestamp(nanosecondsSince1970: 0),
        peer: Peer(uid: 0, gid: 0, pid: 1)
    )
    /// With every member of the meta and the peer's executable.
    static let provenanceEnvelope = ActionEnvelope(
        seq: 10, action: Action(type: "set", payload: ["path": "/a", "value": 2]),
        time: Timestamp(nanosecondsSince1970: 1_795_273_446_000_000_000),
        peer: Peer(uid: 1000, gid: 100, pid: 4242, exe: "/usr/local/bin/checkout"), idempotencyKey: "k-2",
        meta: ActionMeta(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", correlationId: "order-17", causationId: "7",
            source: "checkout \"web\""
        )
    )
    /// With one member of the meta and no executable.
    static let correlatedEnvelope = ActionEnvelope(
        seq: 11, action: Action(type: "reset"), time: Timestamp(nanosecondsSince1970: 0),
        peer: Peer(uid: 0, gid: 0, pid: 1), meta: ActionMeta(correlationId: "order-17")
    )

    func expectFrame(_ bytes: [UInt8], _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(text(bytes) == text(line(expected)), sourceLocation: sourceLocation)
        #expect(bytes == line(expected), sourceLocation: sourceLocation)
    }

    @Test func hello() {
        let result = ServerHello(
            version: "0.1.0", seq: 42, reducer: ReducerIdentity(name: "reel.json", version: "1"))
        expectFrame(
            RPCSuccess(id: 1, result: result).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"result":{"capabilities":["dispatch.batch","dispatch.expectedSeq","dispatch.idempotency","dispatch.meta","dispatch.version","subscribe.patch","subscribe.actions","subscribe.since","subscribe.shared","history","diff","replay","checkpoints","verify","backup","bisect","scan","digest","describe","find","blame","handOver","takeOverProgress","branchCreate","branches","branchDelete"],"protocol":1,"reducer":{"name":"reel.json","version":"1"},"seq":42,"server":"reeld","version":"0.1.0"}}"#
        )
    }

    @Test func dispatch() {
        expectFrame(
            RPCSuccess(id: 2, result: DispatchOutcome(seqs: 43...43, batch: false)).encodedLine(),
            #"{"jsonrpc":"2.0","id":2,"result":{"seq":43}}"#)
        expectFrame(
            RPCSuccess(id: 2, result: DispatchOutcome(seqs: 43...43, duplicate: true, batch: false)).encodedLine(),
            #"{"jsonrpc":"2.0","id":2,"result":{"duplicate":true,"seq":43}}"#)
        expectFrame(
            RPCSuccess(id: 2, result: DispatchOutcome(seqs: 43...43, batch: false)).encodedLine(),
            #"{"jsonrpc":"2.0","id":2,"result":{"seq":43}}"#)
    }

    @Test func dispatchBatchListsEverySeq() {
        expectFrame(
            RPCSuccess(id: "b", result: DispatchOutcome(seqs: 44...47, batch: true)).encodedLine(),
            #"{"jsonrpc":"2.0","id":"b","result":{"seqs":[44,45,46,47]}}"#)
        expectFrame(
            RPCSuccess(id: "b", result: DispatchOutcome(seqs: 44...44, batch: true)).encodedLine(),
            #"{"jsonrpc":"2.0","id":"b","result":{"seqs":[44]}}"#)
        expectFrame(
            RPCSuccess(id: "b", result: DispatchOutcome(seqs: 44...45, duplicate: true, batch: true)).encodedLine(),
            #"{"jsonrpc":"2.0","id":"b","result":{"duplicate":true,"seqs":[44,45]}}"#)
    }

    @Test func get() {
        expectFrame(
            RPCSuccess(id: 3, result: Snapshot<JSONValue>(seq: 46, value: ["a": [1, 2.5, "x", nil, true]])).encodedLine(),
            #"{"jsonrpc":"2.0","id":3,"result":{"seq":46,"value":{"a":[1,2.5,"x",null,true]}}}"#)
    }

    @Test func subscribe() {
        expectFrame(
            RPCSuccess(id: 4, result: SubscribeResult(subscription: "s1", seq: 46, value: ["n": 1])).encodedLine(),
            #"{"jsonrpc":"2.0","id":4,"result":{"seq":46,"subscription":"s1","value":{"n":1}}}"#)
        // `actions` mode: no value.
        expectFrame(
            RPCSuccess(id: 4, result: SubscribeResult(subscription: "s1", seq: 46, value: nil)).encodedLine(),
            #"{"jsonrpc":"2.0","id":4,"result":{"seq":46,"subscription":"s1"}}"#)
        // A value that is JSON null is still a value.
        expectFrame(
            RPCSuccess(id: 4, result: SubscribeResult(subscription: "s1", seq: 0, value: .null)).encodedLine(),
            #"{"jsonrpc":"2.0","id":4,"result":{"seq":0,"subscription":"s1","value":null}}"#)
    }

    @Test func unsubscribe() {
        expectFrame(
            RPCSuccess(id: 5, result: UnsubscribeResult()).encodedLine(),
            #"{"jsonrpc":"2.0","id":5,"result":{}}"#)
    }

    @Test func history() {
        expectFrame(
            RPCSuccess(id: 6, result: HistoryPage(actions: [Self.envelope, Self.unknownPeerEnvelope], next: 9)).encodedLine(),
            #"{"jsonrpc":"2.0","id":6,"result":{"actions":[{"payload":{"path":"/a","value":1},"peer":{"gid":100,"pid":4242,"uid":1000},"seq":7,"time":"2026-11-21T15:04:05.123456789Z","type":"set"},{"payload":{"to":3},"peer":{"gid":4294967295,"pid":0,"uid":4294967295},"seq":8,"time":"1969-12-31T23:59:59.999999999Z","type":"@revert"}],"next":9}}"#)
        // The last page: no `next`. An action without payload shows `null`.
        expectFrame(
            RPCSuccess(id: 6, result: HistoryPage(actions: [Self.noPayloadEnvelope], next: nil)).encodedLine(),
            #"{"jsonrpc":"2.0","id":6,"result":{"actions":[{"payload":null,"peer":{"gid":0,"pid":1,"uid":0},"seq":9,"time":"1970-01-01T00:00:00.000000000Z","type":"reset"}]}}"#)
        expectFrame(
            RPCSuccess(id: 6, result: HistoryPage(actions: [], next: nil)).encodedLine(),
            #"{"jsonrpc":"2.0","id":6,"result":{"actions":[]}}"#)
    }

    /// `meta` first, only when given, with its members in sorted order; `peer.exe` only when known.
    @Test func historyWithProvenance() {
        expectFrame(
            RPCSuccess(id: 6, result: HistoryPage(actions: [Self.provenanceEnvelope, Self.correlatedEnvelope], next: nil)).encodedLine(),
            #"{"jsonrpc":"2.0","id":6,"result":{"actions":[{"meta":{"causationId":"7","correlationId":"order-17","source":"checkout \"web\"","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"payload":{"path":"/a","value":2},"peer":{"exe":"/usr/local/bin/checkout","gid":100,"pid":4242,"uid":1000},"seq":10,"time":"2026-11-21T15:04:06.000000000Z","type":"set"},{"meta":{"correlationId":"order-17"},"payload":null,"peer":{"gid":0,"pid":1,"uid":0},"seq":11,"time":"1970-01-01T00:00:00.000000000Z","type":"reset"}]}}"#)
        // The value form (`reel log --json`, `reel export`) is the same text.
        #expect(Self.provenanceEnvelope.wireJSON.serialized() == {
            var bytes: [UInt8] = []
            Self.provenanceEnvelope.writeWire(into: &bytes)
            return bytes
        }())
    }

    @Test func diff() throws {
        let patch = JSONPatch([
            .replace(path: try JSONPointer("/a"), value: 2),
            .remove(path: try JSONPointer("/b~1c")),
            .move(from: try JSONPointer("/x"), path: try JSONPointer("/y")),
            .add(path: try JSONPointer("/list/-"), value: ["k": nil]),
        ])
        expectFrame(
            RPCSuccess(id: 7, result: DiffResult(patch: patch)).encodedLine(),
            #"{"jsonrpc":"2.0","id":7,"result":{"patch":[{"op":"replace","path":"/a","value":2},{"op":"remove","path":"/b~1c"},{"from":"/x","op":"move","path":"/y"},{"op":"add","path":"/list/-","value":{"k":null}}]}}"#)
        expectFrame(
            RPCSuccess(id: 7, result: DiffResult(patch: JSONPatch([]))).encodedLine(),
            #"{"jsonrpc":"2.0","id":7,"result":{"patch":[]}}"#)
    }

    @Test func replay() {
        expectFrame(
            RPCSuccess(id: 8, result: ReplayResult(value: ["a": 1])).encodedLine(),
            #"{"jsonrpc":"2.0","id":8,"result":{"value":{"a":1}}}"#)
        expectFrame(
            RPCSuccess(id: 8, result: ReplayResult(value: 0, refused: [SeqReason(seq: 5, reason: "nothing at /b")])).encodedLine(),
            #"{"jsonrpc":"2.0","id":8,"result":{"refused":[{"reason":"nothing at /b","seq":5}],"value":0}}"#)
    }

    @Test func stats() {
        expectFrame(
            RPCSuccess(id: 9, result: Self.stats(seq: 46, commits: 3, other: ["connections": ["open": 2]])).encodedLine(),
            #"{"jsonrpc":"2.0","id":9,"result":{"commits":3,"connections":{"open":2},"seq":46}}"#)
        expectFrame(
            RPCSuccess(id: 9, result: StatsResult(seq: 0)).encodedLine(),
            #"{"jsonrpc":"2.0","id":9,"result":{"seq":0}}"#)
    }

    static func stats(seq: UInt64, commits: UInt64, other: JSONObject) -> StatsResult {
        var stats = StatsResult(seq: seq)
        stats.commits = commits
        stats.other = other
        return stats
    }

    // MARK: Maintenance methods (additions to protocol 1's first methods)

    static let checkpointTime = Timestamp(nanosecondsSince1970: 1_795_273_445_000_000_001)

    @Test func checkpoints() {
        let list = CheckpointList(
            checkpoints: [CheckpointInfo(seq: 10, reducer: ReducerIdentity(name: "reel.json", version: "1"), time: Self.checkpointTime, hash: "ab01")],
            reducer: ReducerIdentity(name: "reel.json", version: "1")
        )
        expectFrame(
            RPCSuccess(id: 10, result: list).encodedLine(),
            #"{"jsonrpc":"2.0","id":10,"result":{"checkpoints":[{"hash":"ab01","reducer":{"name":"reel.json","version":"1"},"seq":10,"time":"2026-11-21T15:04:05.000000001Z"}],"reducer":{"name":"reel.json","version":"1"}}}"#)
        expectFrame(
            RPCSuccess(id: 10, result: CheckpointList(checkpoints: [], reducer: ReducerIdentity(name: "r", version: "2"))).encodedLine(),
            #"{"jsonrpc":"2.0","id":10,"result":{"checkpoints":[],"reducer":{"name":"r","version":"2"}}}"#)
    }

    @Test func verify() throws {
        let clean = VerifyOutcome(
            from: 0, through: 30, matched: [10, 20], skipped: [SeqReason(seq: 25, reason: "another reducer")],
            refused: [], mismatch: nil
        )
        expectFrame(
            RPCSuccess(id: 11, result: clean).encodedLine(),
            #"{"jsonrpc":"2.0","id":11,"result":{"from":0,"matched":[10,20],"refused":[],"skipped":[{"reason":"another reducer","seq":25}],"through":30}}"#)
        let mismatch = VerifyOutcome(
            from: 10, through: 20, matched: [], skipped: [], refused: [SeqReason(seq: 12, reason: "no")],
            mismatch: .init(
                seq: 20, reason: "differs", patch: JSONPatch([.replace(path: try JSONPointer("/a"), value: 2)]),
                checkpointHash: "c1", replayedHash: "r1"
            )
        )
        expectFrame(
            RPCSuccess(id: 11, result: mismatch).encodedLine(),
            #"{"jsonrpc":"2.0","id":11,"result":{"from":10,"matched":[],"mismatch":{"checkpointHash":"c1","patch":[{"op":"replace","path":"/a","value":2}],"reason":"differs","replayedHash":"r1","seq":20},"refused":[{"reason":"no","seq":12}],"skipped":[],"through":20}}"#)
    }

    @Test func backup() {
        expectFrame(
            RPCSuccess(id: 12, result: BackupOutcome(path: "/tmp/b", seq: 7, bytes: 65536)).encodedLine(),
            #"{"jsonrpc":"2.0","id":12,"result":{"bytes":65536,"path":"/tmp/b","seq":7}}"#)
    }

    @Test func bisect() {
        expectFrame(
            RPCSuccess(id: 13, result: BisectOutcome(seq: 17, through: 40, probes: 6)).encodedLine(),
            #"{"jsonrpc":"2.0","id":13,"result":{"probes":6,"seq":17,"through":40}}"#)
        // Never holds: the seq is null, not absent.
        expectFrame(
            RPCSuccess(id: 13, result: BisectOutcome(seq: nil, through: 40, probes: 3)).encodedLine(),
            #"{"jsonrpc":"2.0","id":13,"result":{"probes":3,"seq":null,"through":40}}"#)
    }

    @Test func scan() {
        let outcome = ScanOutcome(actions: 30, checkpoints: 2, idempotencyKeys: 1, damaged: [
            .init(what: "action", seq: 5, key: nil, reason: "checksum"),
            .init(what: "idempotencyKey", seq: nil, key: "k", reason: "short"),
        ])
        expectFrame(
            RPCSuccess(id: 14, result: outcome).encodedLine(),
            #"{"jsonrpc":"2.0","id":14,"result":{"actions":30,"checkpoints":2,"damaged":[{"reason":"checksum","seq":5,"what":"action"},{"key":"k","reason":"short","what":"idempotencyKey"}],"idempotencyKeys":1}}"#)
    }

    @Test func digest() throws {
        expectFrame(
            RPCSuccess(id: 15, result: DigestResult(seq: 2, sha256: "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35")).encodedLine(),
            #"{"jsonrpc":"2.0","id":15,"result":{"seq":2,"sha256":"d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35"}}"#)
        // Its params are those of `get`, read as strictly.
        let params = DigestParams(path: try JSONPointer("/n"), at: 2)
        #expect(try RPCCall(method: "digest", params: params.jsonValue) == RPCCall(Method.Digest.self, params))
        #expect(throws: RPCError.self) { try RPCCall(method: "digest", params: ["at": "2"]) }
        #expect(throws: RPCError.self) { try RPCCall(method: "digest", params: ["value": 1]) }
    }

    @Test func describe() throws {
        let description = StoreDescription(reducer: ReducerIdentity(name: "reel.json", version: "1"), actions: [
            ActionDescription(type: "remove", schema: ["type": "object", "required": ["path"]], example: ["path": "/a"])
        ])
        expectFrame(
            RPCSuccess(id: 16, result: description).encodedLine(),
            #"{"jsonrpc":"2.0","id":16,"result":{"actions":[{"example":{"path":"/a"},"schema":{"required":["path"],"type":"object"},"type":"remove","version":1,"versions":[1]}],"reducer":{"name":"reel.json","version":"1"}}}"#)
        #expect(try RPCCall(method: "describe", params: nil) == RPCCall(Method.Describe.self, DescribeParams()))
        #expect(throws: RPCError.self) { try RPCCall(method: "describe", params: ["type": "set"]) }
    }

    /// Every result reads back to itself from the bytes the server writes: the two ends share
    /// one type per message.
    @Test func everyResultReadsBackFromItsBytes() throws {
        func roundTrip<Result: MethodResult & Equatable>(_ result: Result, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let json = try JSONValue(parsing: result.asJSON.serialized())
            #expect(try Result(result: json) == result, sourceLocation: sourceLocation)
            // What the typed writer wrote is canonical: the same bytes as the equal JSON value's.
            var bytes: [UInt8] = []
            result.writeJSON(into: &bytes)
            #expect(bytes == json.serialized(), sourceLocation: sourceLocation)
        }
        try roundTrip(ServerHello(version: "0.1.0", seq: 42, reducer: ReducerIdentity(name: "n", version: "1")))
        try roundTrip(DispatchOutcome(seqs: 3...3, batch: false))
        try roundTrip(DispatchOutcome(seqs: 3...5, duplicate: true, batch: true))
        try roundTrip(Snapshot<JSONValue>(seq: 4, value: ["a": [1, nil]]))
        try roundTrip(SubscribeResult(subscription: "s1", seq: 4, value: nil))
        try roundTrip(SubscribeResult(subscription: "s1", seq: 4, value: .null))
        try roundTrip(UnsubscribeResult())
        try roundTrip(HistoryPage(actions: [Self.envelope.withoutKey, Self.unknownPeerEnvelope, Self.noPayloadEnvelope], next: 10))
        try roundTrip(HistoryPage(actions: [Self.provenanceEnvelope.withoutKey, Self.correlatedEnvelope], next: nil))
        try roundTrip(DiffResult(patch: JSONPatch([.remove(path: try JSONPointer("/x"))])))
        try roundTrip(ReplayResult(value: 1, refused: [SeqReason(seq: 2, reason: "r")]))
        try roundTrip(Self.stats(seq: 9, commits: 2, other: ["extra": true]))
        try roundTrip(CheckpointList(checkpoints: [CheckpointInfo(seq: 1, reducer: ReducerIdentity(name: "n", version: "1"), time: Self.checkpointTime, hash: "00")], reducer: ReducerIdentity(name: "n", version: "1")))
        try roundTrip(VerifyOutcome(from: 0, through: 3, matched: [1], skipped: [], refused: [], mismatch: nil))
        try roundTrip(BackupOutcome(path: "/b", seq: 1, bytes: 2))
        try roundTrip(BisectOutcome(seq: nil, through: 3, probes: 1))
        try roundTrip(DigestResult(seq: 1, sha256: "00"))
        let branch = BranchInfoResult(name: "experiment", at: 3, seq: 5, created: Self.checkpointTime)
        try roundTrip(branch)
        try roundTrip(BranchList(branches: [branch, BranchInfoResult(name: "a/b", at: 0, seq: 0, created: Self.checkpointTime)]))
        try roundTrip(BranchDeleteResult())
        try roundTrip(BlameOutcome(seq: 9, entries: [
            .init(path: try JSONPointer("/cart/a~1b"), seq: 4, type: "set", time: Self.checkpointTime, peer: Peer(uid: 1, gid: 2, pid: 3, exe: "/bin/x")),
            .init(path: .root, seq: nil),
        ], next: try JSONPointer("/cart/a~1b")))
        try roundTrip(ScanOutcome(actions: 1, checkpoints: 0, idempotencyKeys: 0, damaged: [.init(what: "log", seq: nil, key: nil, reason: "gap")]))
        try roundTrip(StoreDescription(reducer: ReducerIdentity(name: "n", version: "1"), actions: [
            ActionDescription(type: "t", version: 2, schema: ["type": "object"], example: ["a": 1]), .undescribed("u"),
        ]))
    }

    /// A result missing what the protocol promises is refused by name, not read as a zero.
    @Test func aResultWithoutAPromisedMemberIsRefused() {
        #expect(throws: RPCError.self) { try DispatchOutcome(result: ["duplicate": true]) }
        #expect(throws: RPCError.self) { try Snapshot<JSONValue>(result: ["seq": 1]) }
        #expect(throws: RPCError.self) { try DispatchOutcome(result: ["seqs": [3, 5]]) }
        do {
            _ = try HistoryPage(result: ["next": 3])
            Issue.record("a history result without actions was read")
        } catch {
            #expect(error.message == "a history result needs actions (an array)")
        }
    }

    // MARK: Notifications

    @Test func updateInValueMode() {
        expectFrame(
            RPCNotification.update(subscription: "s1", seq: 47, value: ["n": 2]).encodedLine(),
            #"{"jsonrpc":"2.0","method":"update","params":{"seq":47,"subscription":"s1","value":{"n":2}}}"#)
    }

    @Test func updateInPatchMode() throws {
        let patch = JSONPatch([.replace(path: try JSONPointer("/n"), value: 3)])
        expectFrame(
            RPCNotification.update(subscription: "s1", seq: 48, patch: patch).encodedLine(),
            #"{"jsonrpc":"2.0","method":"update","params":{"patch":[{"op":"replace","path":"/n","value":3}],"seq":48,"subscription":"s1"}}"#)
    }

    @Test func updateInActionsMode() {
        expectFrame(
            RPCNotification.update(subscription: "s2", seq: 9, actions: [Self.unknownPeerEnvelope, Self.noPayloadEnvelope]).encodedLine(),
            #"{"jsonrpc":"2.0","method":"update","params":{"actions":[{"payload":{"to":3},"peer":{"gid":4294967295,"pid":0,"uid":4294967295},"seq":8,"time":"1969-12-31T23:59:59.999999999Z","type":"@revert"},{"payload":null,"peer":{"gid":0,"pid":1,"uid":0},"seq":9,"time":"1970-01-01T00:00:00.000000000Z","type":"reset"}],"seq":9,"subscription":"s2"}}"#)
        expectFrame(
            RPCNotification.update(subscription: "s2", seq: 11, actions: [Self.correlatedEnvelope]).encodedLine(),
            #"{"jsonrpc":"2.0","method":"update","params":{"actions":[{"meta":{"correlationId":"order-17"},"payload":null,"peer":{"gid":0,"pid":1,"uid":0},"seq":11,"time":"1970-01-01T00:00:00.000000000Z","type":"reset"}],"seq":11,"subscription":"s2"}}"#)
    }

    @Test func notificationWithoutParams() {
        expectFrame(RPCNotification(method: "ping").encodedLine(), #"{"jsonrpc":"2.0","method":"ping"}"#)
    }

    // MARK: Errors

    @Test func parseErrorHasANullID() {
        expectFrame(
            RPCResponse(id: nil, error: .parseError("expected a JSON value, found end of input at byte 0")).encodedLine(),
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON: expected a JSON value, found end of input at byte 0; send one JSON-RPC 2.0 request object per line"}}"#)
    }

    @Test func errorMembersAreInCodeMessageDataOrder() {
        expectFrame(
            RPCResponse(id: "a7", error: .seqMismatch(expected: 4, current: 7)).encodedLine(),
            #"{"jsonrpc":"2.0","id":"a7","error":{"code":1003,"message":"expectedSeq is 4 but the latest seq is 7; read the state again and retry","data":{"seq":7}}}"#)
        expectFrame(
            RPCResponse(id: 1, error: .lineTooLong(limit: 1_048_576)).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"error":{"code":1007,"message":"request line longer than the limit of 1048576 bytes; the connection is closed (split large batches)","data":{"limit":1048576}}}"#)
        expectFrame(
            RPCResponse(id: 1, error: RPCError(code: 1005, message: "nothing at /todos/9 in the state at seq 12")).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"error":{"code":1005,"message":"nothing at /todos/9 in the state at seq 12"}}"#)
        expectFrame(
            RPCResponse(id: 1, error: RPCError(code: 1001, message: "rejected", data: .null)).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"error":{"code":1001,"message":"rejected","data":null}}"#)
    }

    @Test func methodNotFoundListsTheMethods() {
        expectFrame(
            RPCResponse(id: 1, error: .methodNotFound("dispach")).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"unknown method \"dispach\"; protocol 1 has: hello, dispatch, get, subscribe, unsubscribe, history, diff, replay, stats, checkpoints, verify, backup, bisect, scan, digest, describe, find, blame, handOver, takeOverProgress, branchCreate, branches, branchDelete"}}"#)
    }

    @Test func shuttingDown() {
        expectFrame(
            RPCResponse(id: 1, error: .shuttingDown).encodedLine(),
            #"{"jsonrpc":"2.0","id":1,"error":{"code":1009,"message":"the daemon is shutting down; reconnect once it is back"}}"#)
    }

    @Test func textThatNeedsEscapingStaysOnOneLine() {
        let bytes = RPCResponse(id: "x\n\"y\"", error: RPCError(code: 1001, message: "line 1\nline 2\té")).encodedLine()
        expectFrame(bytes, #"{"jsonrpc":"2.0","id":"x\n\"y\"","error":{"code":1001,"message":"line 1\nline 2\té"}}"#)
        #expect(bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1)
    }

    @Test func encodeAppendsToABufferWithoutClearingIt() {
        var buffer = Array("previous\n".utf8)
        RPCSuccess(id: 1, result: UnsubscribeResult()).encode(into: &buffer)
        RPCNotification.update(subscription: "s", seq: 1, value: 1).encode(into: &buffer)
        #expect(text(buffer) == "previous\n" + #"{"jsonrpc":"2.0","id":1,"result":{}}"# + "\n"
            + #"{"jsonrpc":"2.0","method":"update","params":{"seq":1,"subscription":"s","value":1}}"# + "\n")
    }
}

extension ActionEnvelope {
    /// The envelope as the wire carries it: the idempotency key stays with its client.
    var withoutKey: ActionEnvelope {
        var copy = self
        copy.idempotencyKey = nil
        return copy
    }
}
