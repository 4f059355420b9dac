import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// SIGTERM while clients pipeline dispatches, through the real `reeld`: the daemon answers every
/// request it read before it closes a connection, so what it committed and what it acknowledged
/// are the same actions.
@Suite(.serialized) struct ReeldGracefulShutdownTests {
    static let connections = 8
    static let dispatchesPerConnection = 2_000

    @Test func sigtermMidStreamAnswersEveryDispatchItCommitted() async throws {
        let dir = try TemporaryDirectory()
        let daemon = try DaemonProcess(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let streams = (0..<Self.connections).map(RequestStream.init)
        let received = LineCounter()
        let socketPath = daemon.socketPath
        let outcomes = try await withThrowingTaskGroup(of: (Int, PipeliningClient.Outcome).self) { group in
            for stream in streams {
                group.addTask {
                    (stream.connection, try await PipeliningClient.run(socketPath: socketPath, requests: stream.bytes, received: received))
                }
            }
            // Mid-stream: every connection has answers coming, and most of its requests are unsent.
            let started = ContinuousClock.now
            while received.current < Self.connections * 20 && ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(try await daemon.stop(signal: SIGTERM) == 0)
            var outcomes: [Int: PipeliningClient.Outcome] = [:]
            for try await (connection, outcome) in group { outcomes[connection] = outcome }
            return outcomes
        }

        // What each connection was told: per connection, the values acknowledged with a seq.
        var acknowledged: [Int: [(seq: Int64, value: JSONValue)]] = [:]
        var answeredInAll = 0
        for stream in streams {
            let outcome = try #require(outcomes[stream.connection])
            let label = "connection \(stream.connection) (\(outcome.lines.count) answers, \(stream.linesWritten(outcome.bytesWritten)) requests written, reading ended: \(outcome.ending))"
            var answers: [Int64: JSONValue] = [:]
            for line in outcome.lines {
                let answer = try JSONValue(parsing: line)
                let id = try #require(answer["id"]?.intValue, "an answer without an id on \(label): \(answer.jsonString)")
                #expect(answers[id] == nil, "request \(id) answered twice on \(label)")
                answers[id] = answer
            }
            // The daemon reads a connection in order and answers in request order: what it
            // answered is the first requests, and only requests that were written.
            #expect(Set(answers.keys) == Set((0..<Int64(answers.count))), "answers are not the first requests on \(label)")
            #expect(answers.count <= stream.linesWritten(outcome.bytesWritten), "answers to requests never written on \(label)")
            answeredInAll += answers.count
            for id in answers.keys.sorted() {
                let answer = answers[id]!
                if let seq = answer["result"]?["seq"]?.intValue {
                    acknowledged[stream.connection, default: []].append((seq, stream.value(id)))
                } else {
                    #expect(answer["error"]?["code"] == 1009, "request \(id) on \(label) answered neither a seq nor 1009: \(answer.jsonString)")
                }
            }
        }
        #expect(answeredInAll < Self.connections * Self.dispatchesPerConnection, "every request was answered: SIGTERM came too late to test a shutdown mid-stream")

        // Restarted, the log holds exactly the acknowledged actions: none committed unanswered.
        let again = try DaemonProcess(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
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
            #expect(
                logged == told,
                "connection \(stream.connection): \(logged.count) actions logged, \(told.count) acknowledged; committed but never answered: \(logged.count - told.count)"
            )
        }
    }
}

/// The requests of one connection: `dispatchesPerConnection` appends to `/c<connection>`, as the
/// bytes to write.
struct RequestStream {
    let connection: Int
    let bytes: [UInt8]
    /// Where each request line ends in `bytes` (just after its newline).
    private let lineEnds: [Int]

    init(connection: Int) {
        self.connection = connection
        var bytes: [UInt8] = []
        var lineEnds: [Int] = []
        for id in 0..<ReeldGracefulShutdownTests.dispatchesPerConnection {
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
