import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// Idempotency keys are committed with their actions, so they outlive a crash: a retry after a
/// `kill -9` is answered as a duplicate, with the first seqs, and changes nothing.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldCrashIdempotencyTests {
    @Test func keysAcknowledgedBeforeAKillNineAreDuplicatesAfterIt() async throws {
        let dir = try TemporaryDirectory()
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let increment: JSONValue = ["type": "increment", "payload": ["path": "/n"]]
        let (stateBefore, historyBefore) = try await TestConnection.open(socketPath: first.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/n", 0))["result"] == ["seq": 1])
            let batch: JSONValue = ["actions": [increment, increment], "idempotencyKey": "batch-key"]
            #expect(try await connection.request(2, "dispatch", batch)["result"] == ["seqs": [2, 3]])
            let single: JSONValue = ["action": increment, "idempotencyKey": "single-key"]
            #expect(try await connection.request(3, "dispatch", single)["result"] == ["seq": 4])
            return (try await connection.request(4, "get"), try await connection.request(5, "history", ["from": 1]))
        }
        #expect(stateBefore["result"] == ["seq": 4, "value": ["n": 3]])
        _ = try await first.stop(signal: SIGKILL)

        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()
        try await TestConnection.open(socketPath: second.socketPath) { connection throws in
            // The same dispatches again.
            let batch: JSONValue = ["actions": [increment, increment], "idempotencyKey": "batch-key"]
            #expect(try await connection.request(1, "dispatch", batch)["result"] == ["duplicate": true, "seqs": [2, 3]])
            let single: JSONValue = ["action": increment, "idempotencyKey": "single-key"]
            #expect(try await connection.request(2, "dispatch", single)["result"] == ["duplicate": true, "seq": 4])
            // The keys with other payloads, another form and a stale expectedSeq: still duplicates.
            let other: JSONValue = ["action": ["type": "set", "payload": ["path": "/n", "value": 99]], "idempotencyKey": "batch-key", "expectedSeq": 0]
            #expect(try await connection.request(3, "dispatch", other)["result"] == ["duplicate": true, "seq": 2])
            let otherBatch: JSONValue = ["actions": [["type": "set", "payload": ["path": "/m", "value": 1]]], "idempotencyKey": "single-key"]
            #expect(try await connection.request(4, "dispatch", otherBatch)["result"] == ["duplicate": true, "seqs": [4]])
            // Log and state unchanged.
            #expect(try await connection.request(5, "get") == stateBefore.withID(5))
            #expect(try await connection.request(6, "history", ["from": 1]) == historyBefore.withID(6))
            // A fresh key is applied, after the seqs the crash kept.
            let fresh: JSONValue = ["action": increment, "idempotencyKey": "fresh-key"]
            #expect(try await connection.request(7, "dispatch", fresh)["result"] == ["seq": 5])
        }
        #expect(try await second.stop() == 0)
    }
}

extension JSONValue {
    /// A response as it would be with another id.
    func withID(_ id: Int) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members["id"] = .int(Int64(id))
        return .object(members)
    }
}
