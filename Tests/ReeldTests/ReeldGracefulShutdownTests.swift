import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// SIGTERM while clients pipeline dispatches, through the real `reeld`: the daemon answers every
/// request it read before it closes a connection, so what it committed and what it acknowledged
/// are the same actions.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct ReeldGracefulShutdownTests {
    static let connections = 8
    /// Enough that the daemon cannot have read them all when SIGTERM comes after the first 160
    /// answers: at 2,000 a faster daemon (answers written in batches) sometimes had, and the test
    /// then tested no shutdown mid-stream (it says so and fails).
    static let dispatchesPerConnection = 6_000

    @Test func sigtermMidStreamAnswersEveryDispatchItCommitted() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let streams = (0..<Self.connections).map { RequestStream(connection: $0) }
        let received = LineCounter()
        let socketPath = daemon.socketPath
        let outcomes = try await withThrowingTaskGroup(of: (Int, PipeliningClient.Outcome).self) { group in
            for stream in streams {
                group.addTask {
                    (stream.connection, try await PipeliningClient.run(socketPath: socketPath, requests: stream.bytes, received: received))
                }
            }
            // Mid-stream: answers are coming, and most requests are not even written yet.
            try await waitUntil("\(Self.connections * 20) answers", timeout: .seconds(30)) { received.current >= Self.connections * 20 }
            let status = try await daemon.stop(signal: SIGTERM)
            #expect(status == 0, "reeld: \(daemon.stderr)")
            var outcomes: [Int: PipeliningClient.Outcome] = [:]
            for try await (connection, outcome) in group { outcomes[connection] = outcome }
            return outcomes
        }

        // What each connection was told: per connection, the values acknowledged with a seq.
        var acknowledged: [Int: [(seq: Int64, value: JSONValue)]] = [:]
        var answeredInAll = 0
        for stream in streams {
            let outcome = try #require(outcomes[stream.connection])
            acknowledged[stream.connection] = try Self.acknowledged(on: stream, outcome)
            answeredInAll += outcome.lines.count
        }
        #expect(answeredInAll < Self.connections * Self.dispatchesPerConnection, "every request was answered: SIGTERM came too late to test a shutdown mid-stream")

        // Restarted, the log holds exactly the acknowledged actions: none committed unanswered.
        let again = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await again.start()
        let state = try await TestConnection.open(socketPath: again.socketPath) { connection throws in
            try await connection.request(1, "get")
        }
        #expect(try await again.stop() == 0)
        let acknowledgedCount = acknowledged.values.map(\.count).reduce(0, +)
        #expect(state["result"]?["seq"] == .int(Int64(acknowledgedCount)), "the log holds other actions than the \(acknowledgedCount) acknowledged")
        for stream in streams {
            let told = (acknowledged[stream.connection] ?? []).sorted { $0.seq < $1.seq }.map(\.value)
            let logged = state["result"]?["value"]?["c\(stream.connection)"]?.arrayValue ?? []
            let loggedAreAcknowledged = logged == told  // a Bool: the arrays are too long to print
            #expect(
                loggedAreAcknowledged,
                "connection \(stream.connection): \(logged.count) actions logged, \(told.count) acknowledged; committed but never answered: \(logged.count - told.count)"
            )
        }
    }
}

extension ReeldGracefulShutdownTests {
    /// Checks the answers one connection got and returns the actions they acknowledged, in
    /// request order: each request is answered once at most, by its seq or by 1009; the answered
    /// requests are the first ones (the daemon reads in order and answers in request order), and
    /// were all written.
    static func acknowledged(on stream: RequestStream, _ outcome: PipeliningClient.Outcome) throws -> [(seq: Int64, value: JSONValue)] {
        let label = "connection \(stream.connection) (\(outcome.lines.count) answers, \(stream.linesWritten(outcome.bytesWritten)) requests written, reading ended: \(outcome.ending))"
        var answers: [Int64: JSONValue] = [:]
        for line in outcome.lines {
            let answer = try JSONValue(parsing: line)
            let id = try #require(answer["id"]?.intValue, "an answer without an id on \(label): \(answer.jsonString)")
            #expect(answers[id] == nil, "request \(id) answered twice on \(label)")
            answers[id] = answer
        }
        #expect(Set(answers.keys) == Set((0..<Int64(answers.count))), "answers are not the first requests on \(label)")
        #expect(answers.count <= stream.linesWritten(outcome.bytesWritten), "answers to requests never written on \(label)")
        var acknowledged: [(seq: Int64, value: JSONValue)] = []
        for (id, answer) in answers.sorted(by: { $0.key < $1.key }) {
            if let seq = answer["result"]?["seq"]?.intValue {
                acknowledged.append((seq, stream.value(id)))
            } else {
                #expect(answer["error"]?["code"] == 1009, "request \(id) on \(label) answered neither a seq nor 1009: \(answer.jsonString)")
            }
        }
        return acknowledged
    }

    /// A peer that never reads its answers holds a graceful shutdown up to the daemon's time limit
    /// (10 s), not forever, and the daemon still exits cleanly.
    @Test func aPeerThatNeverReadsHoldsShutdownOnlyUpToTheLimit() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let big = JSONValue.string(String(repeating: "x", count: 256 << 10))
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/big", big))["result"] == ["seq": 1])
        }
        // 64 answers of 256 KiB each: far more than the socket and NIO hold for a peer that reads nothing.
        let fd = try PipeliningClient.connect(to: daemon.socketPath)
        defer { close(fd) }
        let requests = Array((0..<64).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"get"}"# + "\n" }.joined().utf8)
        let written = requests.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        #expect(written == requests.count)
        // The daemon has read them and is writing answers nobody reads: they pile up in the socket.
        try await waitUntil("answers queued for the peer that never reads") {
            var queued: Int32 = 0
            return ioctl(fd, UInt(FIONREAD), &queued) == 0 && queued >= 128 << 10
        }

        let signalled = ContinuousClock.now
        let status = try await daemon.stop(within: .seconds(30))  // throws if it still runs then
        let took = ContinuousClock.now - signalled
        // Its limit, not forever; the margin is for a busy machine.
        #expect(took < .seconds(25), "the shutdown took \(took); its limit is 10 s")
        #expect(status == 0)
    }
}

extension ReeldGracefulShutdownTests {
    /// Clients connecting while the daemon stops (reconnecting ones do) are closed, and the daemon
    /// still stops cleanly. (A connection accepted just as the listening socket closed used to
    /// trap in NIO, "Deinited NIOAsyncWriter without calling finish()", status 132.)
    @Test(arguments: 0..<5) func connectionsArrivingDuringShutdownAreClosedCleanly(attempt: Int) async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let socketPath = daemon.socketPath
        let connected = LineCounter()
        async let burst = PipeliningClient.connectUntilRefused(socketPath: socketPath, connected: connected)
        // Signalled once connections are arriving; they go on arriving until the socket is gone.
        try await waitUntil("the first connections") { connected.current >= 8 }
        let status = try await daemon.stop(signal: SIGTERM)
        let ending = await burst
        #expect(status == 0, "reeld: \(daemon.stderr)")
        #expect(ending.refused, "connections stopped arriving before the daemon stopped listening (\(ending.connections) made)")
    }
}

/// The end of a peer's input, as Ctrl-D in `socat` makes it, is not the end of its answers.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ReeldEndOfInputTests {
    @Test func aPeerThatEndsItsInputGetsEveryAnswerThenTheClose() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let stream = RequestStream(connection: 0, count: 20)
        let outcome = try await PipeliningClient.run(socketPath: daemon.socketPath, requests: stream.bytes, endingInput: true)
        #expect(outcome.bytesWritten == stream.bytes.count)
        #expect(outcome.ending == "eof")
        let answers = try outcome.lines.map { try JSONValue(parsing: $0) }
        #expect(answers.map { $0["id"]?.intValue } == (0..<20).map { Int64($0) })
        #expect(answers.map { $0["result"]?["seq"]?.intValue } == (1...20).map { Int64($0) })
        #expect(try await daemon.stop() == 0)
    }
}

/// The requests of one connection: `count` appends to `/c<connection>`, as the bytes to write.
struct RequestStream {
    let connection: Int
    let bytes: [UInt8]
    /// Where each request line ends in `bytes` (just after its newline).
    private let lineEnds: [Int]

    init(connection: Int, count: Int = ReeldGracefulShutdownTests.dispatchesPerConnection) {
        self.connection = connection
        var bytes: [UInt8] = []
        var lineEnds: [Int] = []
        for id in 0..<count {
            let request: JSONValue = [
                "jsonrpc": "2.0", "id": .int(Int64(id)), "method": "dispatch",
                "params": Params.dispatch("append", ["path": .string("/c\(connection)"), "value": Self.value(connection, Int64(id))]),
            ]
            bytes += Array((request.jsonString + "\n").utf8)
            lineEnds.append(bytes.count)
        }
        self.bytes = bytes
        self.lineEnds = lineEnds
    }

    /// The value request `id` appends.
    func value(_ id: Int64) -> JSONValue { Self.value(connection, id) }

    private static func value(_ connection: Int, _ id: Int64) -> JSONValue { .string("c\(connection) #\(id)") }

    /// How many whole request lines the first `count` bytes hold.
    func linesWritten(_ count: Int) -> Int {
        lineEnds.prefix { $0 <= count }.count
    }
}
