import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// The real `reeld` executable, spoken to over its socket.
@Suite(.serialized) struct ReeldEndToEndTests {
    @Test func servesStopsGracefullyAndKeepsItsStateAcrossRestarts() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/n", 41))["result"] == ["seq": 1])
            let batch: JSONValue = ["actions": [["type": "increment", "payload": ["path": "/n"]]]]
            #expect(try await connection.request(2, "dispatch", batch)["result"] == ["seqs": [2]])
        }
        #expect(try await daemon.stop(signal: SIGTERM) == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath), "the socket outlived a clean stop")

        let again = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await again.start()
        try await TestConnection.open(socketPath: again.socketPath) { connection throws in
            #expect(try await connection.request(1, "get")["result"] == ["seq": 2, "value": ["n": 42]])
            #expect(try await connection.request(2, "stats")["result"]?["restoredFromCheckpoint"] == 2)
        }
        #expect(try await again.stop(signal: SIGINT) == 0)
    }

    @Test func aSecondDaemonOnTheSameDataRefusesAndTheFirstKeepsServing() async throws {
        let dir = try TemporaryDirectory()
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("other.sock"))
        let outcome = try await second.runToExit()
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("another reeld"))
        #expect(outcome.stderr.split(separator: "\n").count == 1, "not one line: \(outcome.stderr)")
        // Same socket, other data: the live socket is not taken over either.
        let third = SpawnedDaemon(dataDirectory: dir.sub("data2"), socketPath: dir.sub("reel.sock"))
        let refused = try await third.runToExit()
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("in use"))
        try await TestConnection.open(socketPath: first.socketPath) { connection throws in
            #expect(try await connection.request(1, "hello")["result"]?["server"] == "reeld")
        }
        #expect(try await first.stop() == 0)
    }

    @Test func killNineDuringConcurrentDispatchesLosesNoAcknowledgedAction() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let acknowledged = AcknowledgedActions()
        let socketPath = daemon.socketPath
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<8 {
                group.addTask {
                    try? await TestConnection.open(socketPath: socketPath) { connection throws in
                        for i in 0..<1_000 {
                            let value = JSONValue.string("client \(client) action \(i)")
                            let response = try await connection.request(i, "dispatch", ["action": ["type": "append", "payload": ["path": .string("/c\(client)"), "value": value]]])
                            guard let seq = response["result"]?["seq"]?.intValue else { return }
                            acknowledged.record(seq: UInt64(seq), value: value)
                        }
                    }
                }
            }
            // Let them run, then kill the daemon in the middle of it.
            for _ in 0..<6_000 where acknowledged.count < 200 { try? await Task.sleep(for: .milliseconds(5)) }
            _ = try? await daemon.stop(signal: SIGKILL)
            await group.waitForAll()
        }
        let acked = acknowledged.all
        #expect(acked.count >= 200)

        // Offline, on the files the killed daemon left: every acknowledged action is there.
        let data = try DataDirectory(path: dir.sub("data"), reducerName: nil, options: .init(readOnly: true))
        for (seq, value) in acked {
            let logged = try #require(try data.envelope(at: seq), "acknowledged seq \(seq) is missing")
            #expect(logged.payload["value"] == value)
        }
        let latest = try data.latestSeq()

        // Restarted, the daemon serves exactly the replay of its log.
        let replayed = try Timeline(directory: data, definition: .stock).state(at: latest)
        let again = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await again.start()
        try await TestConnection.open(socketPath: again.socketPath) { connection throws in
            let state = try await connection.request(1, "get")
            #expect(state["result"]?["seq"] == .int(Int64(latest)))
            #expect(state["result"]?["value"] == replayed)
        }
        #expect(try await again.stop() == 0)
    }

    @Test func garbageOnOneConnectionDisturbsNobodyElse() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { good throws in
            #expect(try await good.request(1, "dispatch", Params.set("/kept", true))["result"] == ["seq": 1])
            try await TestConnection.open(socketPath: daemon.socketPath) { bad throws in
                try await bad.send("\u{01}\u{02}garbage\u{FF}\n")
                #expect(try await bad.receive()["error"]?["code"] == -32700)
                try await bad.send(String(repeating: "x", count: 2 << 20))  // over the 1 MiB limit, no newline
                #expect(try await bad.receive()["error"]?["code"] == 1007)
                #expect(await bad.isClosed())
            }
            #expect(try await good.request(2, "get")["result"] == ["seq": 1, "value": ["kept": true]])
        }
        #expect(try await daemon.stop() == 0)
    }
}

extension ReeldEndToEndTests {
    @Test func aFullStoreAnswers1010AndKeepsServing() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            extraArguments: ["--max-map-size", "1MiB", "--max-line-bytes", "4MiB"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/small", 1))["result"] == ["seq": 1])
            let huge = JSONValue.string(String(repeating: "z", count: 2 << 20))
            let refused = try await connection.request(2, "dispatch", Params.set("/huge", huge))
            #expect(refused["error"]?["code"] == 1010)
            #expect(try await connection.request(3, "get")["result"] == ["seq": 1, "value": ["small": 1]])
            #expect(try await connection.request(4, "dispatch", Params.set("/small", 2))["result"] == ["seq": 2])
        }
        #expect(try await daemon.stop() == 0)
    }

    @Test func aPeerStalledMidLineIsCutOff() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--idle-timeout", "0.3"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { idle throws in
            try await TestConnection.open(socketPath: daemon.socketPath) { stalled throws in
                try await stalled.send("{\"jsonrpc\":\"2.0\",\"id\":1,")
                let cutOff = try await stalled.receive()
                #expect(cutOff["error"]?["code"] == 1007)
                #expect(await stalled.isClosed())
            }
            // Idle between messages for longer than the timeout is fine.
            #expect(try await idle.request(1, "hello")["result"]?["server"] == "reeld")
        }
        #expect(try await daemon.stop() == 0)
    }

    @Test func anUnusableDataDirectoryIsRefusedInOneLine() async throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.sub("not-a-directory"), contents: Data("x".utf8)))
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("not-a-directory"), socketPath: dir.sub("reel.sock"))
        let outcome = try await daemon.runToExit()
        #expect(outcome.status != 0)
        #expect(outcome.stderr.hasPrefix("reeld: "))
        #expect(outcome.stderr.split(separator: "\n").count == 1, "not one line: \(outcome.stderr)")
    }
}

/// Actions the daemon acknowledged, from several client tasks.
final class AcknowledgedActions: @unchecked Sendable {
    private let lock = NSLock()
    private var actions: [UInt64: JSONValue] = [:]

    func record(seq: UInt64, value: JSONValue) {
        lock.withLock { actions[seq] = value }
    }

    var count: Int { lock.withLock { actions.count } }
    var all: [UInt64: JSONValue] { lock.withLock { actions } }
}
