import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// The real `reeld` executable, spoken to over its socket.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldEndToEndTests {
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

    /// The daemon's own threads show their names to `top -H`, `ps -L` and `perf` (the kernel's
    /// name of a thread), not the name of the Dispatch thread that started them.
    @Test func itsThreadsShowTheirNames() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/n", 1))["result"] == ["seq": 1])
        }
        let tasks = "/proc/\(daemon.pid)/task"
        func names() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: tasks).map { task in
                try String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        // (The applier starts with the first action it applies, off the acknowledgement path.)
        try await waitUntil("the writer and the applier, by name, among \((try? names()) ?? [])") {
            let names = try names()
            return names.contains("reel-writer") && names.contains("reel-applier")
        }
        #expect(try await daemon.stop() == 0)
    }

    /// `reeld` allocates with jemalloc (linked, not preloaded): glibc's malloc was 7% of its CPU
    /// per dispatch. jemalloc prints its statistics at exit when asked to through MALLOC_CONF;
    /// glibc's malloc ignores the variable.
    @Test func allocatesWithJemalloc() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["MALLOC_CONF"] = "stats_print:true"
        let result = try await runProgram("reeld", ["--version"], environment: environment)
        #expect(result.status == 0)
        #expect(result.errors.contains("jemalloc statistics"), "reeld runs on glibc's malloc")
    }

    /// With one event loop (what a machine or container with one core gets): dispatches read
    /// together share commits (each used to be committed alone on the loop, with a sync of its
    /// own), and the daemon stops cleanly with a loop group of its own.
    @Test func oneEventLoopGroupsDispatchesReadTogether() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--event-loops", "1"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let responses = try await connection.dispatchTogether((1...50).map { Params.set("/n", .int(Int64($0))) })
            #expect(responses.map { $0["result"]?["seq"] } == (1...50).map { .int(Int64($0)) })
            let stats = try #require(try await connection.request(51, "stats")["result"])
            let commits = try #require(stats["commits"]?.intValue)
            #expect(commits <= 25, "\(commits) commits for 50 dispatches read together")
        }
        #expect(try await daemon.stop(signal: SIGTERM) == 0)
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
        let clients = 8, each = 1_000
        let ledger = DispatchLedger()
        let socketPath = daemon.socketPath
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    // Ends with an error when the daemon dies under it: that is the point.
                    try? await TestConnection.open(socketPath: socketPath) { connection throws in
                        for i in 0..<each {
                            let action = ActionIdentity(client: client, index: i)
                            ledger.sent(action)
                            let response = try await connection.request(i, "dispatch", ["action": ["type": "append", "payload": ["path": .string("/c\(client)"), "value": action.value]]])
                            guard let seq = response["result"]?["seq"]?.intValue else { return }
                            ledger.acknowledged(action, seq: UInt64(seq))
                        }
                    }
                }
            }
            // Kill it in the middle of the stream, while every client waits for an answer.
            try await waitUntil("200 acknowledged dispatches", timeout: .seconds(30)) { ledger.acknowledgedCount >= 200 }
            _ = try await daemon.stop(signal: SIGKILL)
            try await group.waitForAll()
        }
        let acked = ledger.acknowledgedSeqs
        #expect(acked.count >= 200)
        #expect(acked.count < clients * each, "every dispatch was answered: the kill came too late to test a crash mid-stream")
        #expect(ledger.unansweredCount > 0, "no dispatch was in flight when the daemon was killed")
        #expect(Set(acked.values).count == acked.count, "one seq acknowledged for two actions")

        // Offline, on the files the killed daemon left: every acknowledged action is there, at its seq.
        let data = try DataDirectory(path: dir.sub("data"), reducerName: nil, options: .init(readOnly: true))
        for (action, seq) in acked.sorted(by: { $0.value < $1.value }) {
            let logged = try #require(try data.envelope(at: seq), "acknowledged seq \(seq) (\(action)) is missing")
            #expect(logged.payload == ["path": .string("/c\(action.client)"), "value": action.value], "seq \(seq) holds another action than \(action)")
        }
        let latest = try data.latestSeq()

        // Restarted, the daemon serves exactly the replay of its log: each client's actions in the
        // order sent, all the acknowledged ones and at most the one in flight after them.
        let replayed = try Timeline(directory: data, definition: .stock).state(at: latest)
        let again = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await again.start()
        try await TestConnection.open(socketPath: again.socketPath) { connection throws in
            let state = try await connection.request(1, "get")
            #expect(state["result"]?["seq"] == .int(Int64(latest)))
            #expect(state["result"]?["value"] == replayed)
            for client in 0..<clients {
                let logged = state["result"]?["value"]?["c\(client)"]?.arrayValue ?? []
                let answered = ledger.answered(client)
                let expected = (0..<logged.count).map { ActionIdentity(client: client, index: $0).value }
                #expect(logged == expected, "client \(client): the log is not its actions in the order sent")
                #expect(logged.count >= answered && logged.count <= answered + 1, "client \(client): \(logged.count) logged, \(answered) acknowledged")
            }
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

    /// `reeld --data-dir ~`: a directory of other files is refused, in one line, and nothing is
    /// written into it (no lock file, no journal).
    @Test func aDirectoryOfOtherFilesIsRefusedAndLeftAsItWas() async throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("home"), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir.sub("home/.bashrc"), contents: Data("x".utf8)))
        let outcome = try await SpawnedDaemon(dataDirectory: dir.sub("home"), socketPath: dir.sub("reel.sock")).runToExit()
        #expect(outcome.status == 78)
        #expect(outcome.stderr.hasPrefix("reeld: \(dir.sub("home")) is not a Reel data directory: it holds other files (.bashrc)"), "\(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n").count == 1, "not one line: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.sub("home")) == [".bashrc"])
    }

    /// A start refused once the store is open (here: the socket is another daemon's) leaves no
    /// trace: the new data directory it made is gone.
    @Test func aRefusedStartLeavesNothingBehind() async throws {
        let dir = try TemporaryDirectory()
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let refused = try await SpawnedDaemon(dataDirectory: dir.sub("other"), socketPath: dir.sub("reel.sock")).runToExit()
        #expect(refused.status == 75, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("other")), "the refused start left \(dir.sub("other"))")
        #expect(try await first.stop() == 0)
    }

    /// A running daemon keeps its journal's space allocated ahead (its syncs are cheaper in
    /// written blocks); a stopped store costs what it holds.
    @Test func aStoppedStoreCostsWhatItHolds() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let answer = try await connection.request(1, "dispatch", ["action": ["type": "set", "payload": ["path": "/a", "value": 1]]])
            #expect(answer["result"]?["seq"] == 1)
        }
        #expect(Self.sizeOnDisk(dir.sub("data")) > 32 << 20, "the journal is allocated ahead while serving")
        #expect(try await daemon.stop(signal: SIGTERM) == 0)
        let stopped = Self.sizeOnDisk(dir.sub("data"))
        #expect(stopped < 1 << 20, "a stopped store with one action takes \(stopped) bytes")
        let restarted = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await restarted.start()
        try await TestConnection.open(socketPath: restarted.socketPath) { connection throws in
            #expect(try await connection.request(1, "get", ["path": "/a"])["result"]?["value"] == 1)
        }
        #expect(try await restarted.stop(signal: SIGTERM) == 0)
    }

    /// Allocated blocks of the files in `path`, as `du` counts them.
    static func sizeOnDisk(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            var info = stat()
            return stat(path + "/" + name, &info) == 0 ? total + Int(info.st_blocks) * 512 : total
        }
    }
}

/// One dispatch of the kill -9 test: which client sent it, and its place in that client's stream.
struct ActionIdentity: Hashable, Sendable, CustomStringConvertible {
    var client: Int
    var index: Int
    /// The value the action appends, unique to it.
    var value: JSONValue { .string("client \(client) action \(index)") }
    var description: String { "client \(client) action \(index)" }
}

/// What several client tasks sent and which seq the daemon acknowledged for each action, keyed by
/// the action rather than the seq, so that two actions acknowledged with one seq cannot hide each
/// other.
final class DispatchLedger: @unchecked Sendable {
    // @unchecked: every member is behind `lock`.
    private let lock = NSLock()
    private var sentActions: Set<ActionIdentity> = []
    private var seqs: [ActionIdentity: UInt64] = [:]

    func sent(_ action: ActionIdentity) { _ = lock.withLock { sentActions.insert(action) } }

    func acknowledged(_ action: ActionIdentity, seq: UInt64) {
        lock.withLock {
            precondition(seqs[action] == nil, "\(action) acknowledged twice")
            seqs[action] = seq
        }
    }

    var acknowledgedCount: Int { lock.withLock { seqs.count } }
    var acknowledgedSeqs: [ActionIdentity: UInt64] { lock.withLock { seqs } }
    /// Actions sent and never answered: in flight when the daemon died.
    var unansweredCount: Int { lock.withLock { sentActions.count - seqs.count } }
    func answered(_ client: Int) -> Int { lock.withLock { seqs.keys.filter { $0.client == client }.count } }
}
