import Crypto
import Foundation
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// Every protocol method through the client, against a real server on a real socket.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ReelClientMethodTests {
    @Test func helloIsSentOnConnectAndOnRequest() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                let first = client.serverHello
                #expect(first.server == "reeld")
                #expect(first.protocolVersion == 1)
                #expect(first.seq == 0)
                #expect(first.reducer == ReducerIdentity(name: "reel.json", version: "1"))
                #expect(first.supports(.dispatchIdempotency))
                #expect(first.supports(.subscribeSince))

                try await client.dispatch(Stock.set("/n", 1))
                let again = try await client.hello()
                #expect(again.seq == 1)
                #expect(client.serverHello.seq == 1)
            }
        }
    }

    @Test func dispatchesOneActionAndAnAtomicBatch() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                #expect(try await client.dispatch(Stock.set("/todos", [])) == DispatchReceipt(seq: 1))
                let batch = try await client.dispatch(batch: [
                    Stock.append("/todos", "milk"), Stock.append("/todos", "eggs"), Stock.set("/title", "Groceries"),
                ])
                #expect(batch == BatchReceipt(seqs: 2...4))
                #expect(try await client.get().value == ["todos": ["milk", "eggs"], "title": "Groceries"])

                // A refused batch applies nothing: the reducer's 1001 comes back whole.
                let refused = await clientError { () throws(ReelClientError) in
                    try await client.dispatch(batch: [Stock.increment("/x"), Action(type: "remove", payload: ["path": "/nope"])])
                }
                #expect(refused?.code == .serverError)
                #expect(refused?.rpcCode == RPCError.Code.rejected)
                #expect(refused?.serverError?.message.contains("remove") == true)
                #expect(try await client.get().seq == 4)
            }
        }
    }

    @Test func expectedSeqMismatchCarriesTheLatestSeq() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/n", 0))
                try await client.dispatch(Stock.increment())
                let stale = await clientError { () throws(ReelClientError) in
                    try await client.dispatch(Stock.set("/n", 10), expectedSeq: 1)
                }
                #expect(stale?.code == .serverError)
                #expect(stale?.rpcCode == RPCError.Code.seqMismatch)
                #expect(stale?.serverError?.data == ["seq": 2])
                #expect(stale?.message.contains("expectedSeq is 1 but the latest seq is 2") == true)
                // Retrying with the seq from `data` succeeds.
                #expect(try await client.dispatch(Stock.set("/n", 10), expectedSeq: 2).seq == 3)
            }
        }
    }

    @Test func aRepeatedIdempotencyKeyIsAnsweredAsDuplicateAndAppliedOnce() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/n", 0))
                let key = ReelClient.makeIdempotencyKey()
                #expect(key.count == 32)
                #expect(key != ReelClient.makeIdempotencyKey())
                let first = try await client.dispatch(Stock.increment(), idempotencyKey: key)
                let retry = try await client.dispatch(Stock.increment(), idempotencyKey: key)
                #expect(first == DispatchReceipt(seq: 2, duplicate: false))
                #expect(retry == DispatchReceipt(seq: 2, duplicate: true))

                let batchKey = ReelClient.makeIdempotencyKey()
                let batch = try await client.dispatch(batch: [Stock.increment(), Stock.increment()], idempotencyKey: batchKey)
                let batchRetry = try await client.dispatch(batch: [Stock.increment(), Stock.increment()], idempotencyKey: batchKey)
                #expect(batch == BatchReceipt(seqs: 3...4))
                #expect(batchRetry == BatchReceipt(seqs: 3...4, duplicate: true))
                #expect(try await client.get().value == ["n": 3])
            }
        }
    }

    @Test func getReadsNowAtASeqAndASlice() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/todos", []))
                try await client.dispatch(Stock.append("/todos", ["title": "milk"]))
                #expect(try await client.get() == Snapshot(seq: 2, value: ["todos": [["title": "milk"]]]))
                #expect(try await client.get(try JSONPointer("/todos/0/title")) == Snapshot(seq: 2, value: "milk"))
                #expect(try await client.get(try JSONPointer("/todos"), at: 1) == Snapshot(seq: 1, value: []))
                #expect(try await client.get(at: 0) == Snapshot(seq: 0, value: [:]))

                let ninth = try JSONPointer("/todos/9")
                let missing = await clientError { () throws(ReelClientError) in try await client.get(ninth) }
                #expect(missing?.rpcCode == RPCError.Code.pathNotFound)
                let future = await clientError { () throws(ReelClientError) in try await client.get(at: 99) }
                #expect(future?.rpcCode == RPCError.Code.seqOutOfRange)
            }
        }
    }

    @Test func historyPagesCarryTimesAndPeers() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                let before = Date()
                try await client.dispatch(Stock.set("/n", 0))
                for _ in 0..<4 { try await client.dispatch(Stock.increment()) }
                let after = Date()

                let first = try await client.history(limit: 2)
                try #require(first.actions.map(\.seq) == [1, 2])
                #expect(first.next == 3)
                #expect(first.actions[0].action == Stock.set("/n", 0))
                #expect(first.actions[1].type == "increment")
                let peer = first.actions[0].peer
                #expect(peer.pid == getpid())
                #expect(peer.uid == getuid())
                let seconds = Double(first.actions[0].time.nanosecondsSince1970) / 1e9
                #expect(seconds >= before.timeIntervalSince1970 - 1 && seconds <= after.timeIntervalSince1970 + 1)

                let rest = try await client.history(from: 3)
                #expect(rest.actions.map(\.seq) == [3, 4, 5])
                #expect(rest.next == nil)
                let sets = try await client.history(types: ["set"])
                #expect(sets.actions.map(\.seq) == [1])
                #expect(try await client.history(from: 2, to: 3).actions.map(\.seq) == [2, 3])
            }
        }
    }

    @Test func diffAndReplayAnswerTimeTravelQuestions() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/todos", []))
                try await client.dispatch(Stock.append("/todos", ["title": "milk", "done": false]))
                try await client.dispatch(Stock.set("/todos/0/done", true))

                let patch = try await client.diff(from: 1, to: 3)
                #expect(patch == JSONPatch([.add(path: try JSONPointer("/todos/0"), value: ["title": "milk", "done": true])]))
                var state = try await client.get(at: 1).value
                try patch.apply(to: &state)
                #expect(state == (try await client.get().value))
                #expect(try await client.diff(from: 3, to: 3) == JSONPatch([]))

                let whatIf = try await client.replay(skip: [2])
                #expect(whatIf.value == ["todos": []])
                #expect(whatIf.refused.map(\.seq) == [3])
                #expect(whatIf.refused.first?.reason.contains("set") == true)
                let slice = try await client.replay(to: 2, skip: [], path: try JSONPointer("/todos"))
                #expect(slice == ReplayResult(value: [["title": "milk", "done": false]]))
            }
        }
    }

    @Test func statsAndRawCalls() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/n", 1))
                let stats = try await client.stats()
                #expect(stats["seq"] == 1)
                #expect(stats["actionsCommitted"] == 1)

                let raw = try await client.call(method: "get", params: ["path": "/n"], resend: .resendAfterReconnect)
                #expect(raw == ["seq": 1, "value": 1])
                let unknown = await clientError { () throws(ReelClientError) in try await client.call(method: "frobnicate") }
                #expect(unknown?.code == .serverError)
                #expect(unknown?.rpcCode == RPCError.Code.methodNotFound)
                let badParams = await clientError { () throws(ReelClientError) in
                    try await client.call(method: "get", params: ["paht": "/n"])
                }
                #expect(badParams?.rpcCode == RPCError.Code.invalidParams)
            }
        }
    }

    @Test func typedActionsAndStates() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(SetValue(path: "/counter", value: ["n": 1]))
                try await client.dispatch(Increment(path: "/counter/n", by: 41))
                let counter = try await client.get(Counter.self, path: try JSONPointer("/counter"))
                #expect(counter == Snapshot(seq: 2, value: Counter(n: 42)))
                #expect(try await client.get(Int.self, path: try JSONPointer("/counter/n"), at: 1).value == 1)

                let number = try JSONPointer("/counter/n")
                let wrong = await clientError { () throws(ReelClientError) in try await client.get(Counter.self, path: number) }
                #expect(wrong?.code == .decodingFailed)
                #expect(wrong?.message.contains("/counter/n at seq 2") == true)
            }
        }
    }

    @Test func aMissingSocketIsAConnectionFailure() async throws {
        let error = await clientError { () throws(ReelClientError) in
            try await ReelClient.connect(socketPath: "/nonexistent/reel.sock")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("/nonexistent/reel.sock") == true)
    }
}

/// The maintenance methods and `digest` through their typed client methods.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ReelClientMaintenanceTests {
    @Test func checkpointsVerifyBisectScanBackupAndDigest() async throws {
        try await ServerHarness.run(configure: { _ in }) { server in
            try await server.withClient { client throws in
                for n in 1...4 { try await client.dispatch(Stock.set("/n", .int(Int64(n)))) }
                let checkpoints = try await client.checkpoints()
                #expect(checkpoints.reducer == ReducerIdentity(name: "reel.json", version: "1"))
                let verify = try await client.verify()
                #expect(verify.through == 4)
                #expect(verify.mismatch == nil)
                #expect(verify.matched == checkpoints.checkpoints.map(\.seq))
                let found = try await client.bisect(try JSONCondition(parsing: "/n >= 3"))
                #expect(found.seq == 3)
                #expect(found.through == 4)
                let scan = try await client.scan()
                #expect(scan.actions == 4)
                #expect(scan.damaged.isEmpty)

                let dir = try TemporaryDirectory("reel-client-backup")
                let backup = try await client.backup(to: dir.sub("copy"))
                #expect(backup.seq == 4)
                // The destination is now in the way: the daemon says so, and the client does not resend.
                let again = await clientError { () throws(ReelClientError) in _ = try await client.backup(to: dir.sub("copy")) }
                #expect(again?.rpcCode == RPCError.Code.invalidParams)

                // digest: the SHA-256 of the value `get` sends, now and at a past seq.
                let now = try await client.digest()
                #expect(now.seq == 4)
                #expect(now.sha256 == Self.sha256(try await client.get().value))
                let past = try await client.call(Method.Digest.self, DigestParams(path: try JSONPointer("/n"), at: 2))
                #expect(past == DigestResult(seq: 2, sha256: Self.sha256(2)))
                #expect(past.sha256 == "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35", "SHA-256 of the text 2")
                let nothing = try JSONPointer("/nothing")
                let missing = await clientError { () throws(ReelClientError) in
                    _ = try await client.call(Method.Digest.self, DigestParams(path: nothing))
                }
                #expect(missing?.rpcCode == RPCError.Code.pathNotFound)
            }
        }
    }

    static func sha256(_ value: JSONValue) -> String {
        SHA256.hash(data: value.serialized()).map { String(format: "%02x", $0) }.joined()
    }
}
