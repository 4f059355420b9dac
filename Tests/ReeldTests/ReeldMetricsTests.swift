import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `reeld --metrics`: a real daemon scraped over HTTP, its figures moving with what clients do.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldMetricsTests {
    @Test func figuresMoveWithDispatchesRefusalsAndALaggingSubscriber() async throws {
        let dir = try TemporaryDirectory()
        let metricsSocket = dir.sub("metrics.sock")
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--metrics", "unix:" + metricsSocket]
        )
        try await daemon.start()
        try await waitUntil("the metrics socket", timeout: .seconds(10)) { FileManager.default.fileExists(atPath: metricsSocket) }

        let before = try HTTPGet.request(.unix(path: metricsSocket))
        #expect(before.status == 200)
        #expect(before.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for line in before.body.split(separator: "\n") {
            let name = line.hasPrefix("# ") ? line.split(separator: " ").dropFirst(2).first.map(String.init) ?? "" : String(line)
            #expect(name.hasPrefix("reel_"), "a metric not named reel_…: \(line)")
        }
        #expect(HTTPGet.sample(before.body, "reel_actions_acknowledged_total") == 0)
        #expect(HTTPGet.sample(before.body, "reel_seq") == 0)

        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            for i in 0..<5 {
                #expect(try await connection.request(i, "dispatch", Params.set("/n", .int(Int64(i))))["result"] == ["seq": .int(Int64(i + 1))])
            }
            let refused = try await connection.request(9, "dispatch", ["action": ["type": "nope", "payload": [:]]])
            #expect(refused["error"]?["code"] == 1002)
        }
        let after = try HTTPGet.request(.unix(path: metricsSocket)).body
        #expect(HTTPGet.sample(after, "reel_actions_acknowledged_total") == 5)
        #expect(HTTPGet.sample(after, "reel_seq") == 5)
        #expect(HTTPGet.sample(after, #"reel_dispatches_refused_total{code="1002"}"#) == 1)
        #expect(HTTPGet.sample(after, "reel_commit_duration_seconds_count") == 5)
        #expect(HTTPGet.sample(after, "reel_sync_duration_seconds_count") == 5)
        #expect((HTTPGet.sample(after, "reel_commit_duration_seconds_sum") ?? 0) > 0)
        #expect(HTTPGet.sample(after, #"reel_actions_per_commit_bucket{le="1.0"}"#) == 5)
        #expect((HTTPGet.sample(after, "reel_map_used_bytes") ?? 0) > 0)
        #expect((HTTPGet.sample(after, "reel_reader_slots") ?? 0) > 0)
        #expect(HTTPGet.sample(after, "reel_map_max_bytes") == Double(1 << 40))
        // The journal's applier moves the five into LMDB after its delay (100 ms): its commits
        // timed, and nothing left behind them. (On a busy machine the delay may pass between two
        // dispatches, and the last ones go in a second commit: waited for, not assumed.)
        try await waitUntil("the applier's LMDB commits, nothing left behind", timeout: .seconds(10)) {
            let body = try HTTPGet.request(.unix(path: metricsSocket)).body
            return (HTTPGet.sample(body, "reel_lmdb_commit_duration_seconds_count") ?? 0) >= 1
                && HTTPGet.sample(body, "reel_journal_backlog_bytes") == 0
        }
        let applied = try HTTPGet.request(.unix(path: metricsSocket)).body
        #expect((HTTPGet.sample(applied, "reel_lmdb_commit_duration_seconds_sum") ?? 0) > 0)
        #expect(HTTPGet.sample(applied, "reel_journal_backlog_bytes") == 0)

        // A subscriber that reads nothing: its deliveries fall behind as actions commit.
        let stalled = try RawSocket.connectUnix(daemon.socketPath, receiveBuffer: 4096)
        try RawSocket.send(stalled, Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"mode":"actions"}}"#.utf8 + [10]))
        try await waitUntil("the subscription", timeout: .seconds(10)) {
            HTTPGet.sample(try HTTPGet.request(.unix(path: metricsSocket)).body, #"reel_subscriptions{mode="actions"}"#) == 1
        }
        let padding = String(repeating: "x", count: 2_000)
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let batch: JSONValue = ["actions": .array((0..<100).map { _ in ["type": "set", "payload": ["path": "/pad", "value": .string(padding)]] })]
            for i in 0..<20 { _ = try await connection.request(i, "dispatch", batch) }
            let scraped = try HTTPGet.request(.unix(path: metricsSocket)).body
            #expect(HTTPGet.sample(scraped, "reel_connections") == 2)
            #expect(HTTPGet.sample(scraped, "reel_seq") == 2_005)
            let lag = HTTPGet.sample(scraped, #"reel_subscription_lag_seqs{mode="actions"}"#) ?? 0
            #expect(lag > 1_000, "a subscriber that reads nothing lags \(lag) seqs")
            #expect(HTTPGet.sample(scraped, #"reel_subscription_lag_seqs{mode="value"}"#) == 0)

            // `stats` says the same, for people.
            let stats = try await connection.request(30, "stats")["result"]
            #expect(stats?["connections"] == 2)
            #expect(stats?["subscriptions"]?["actions"] == 1)
            #expect((stats?["subscriptionLag"]?["actions"]?.intValue ?? 0) > 1_000)
            #expect(stats?["refusedByCode"]?["1002"] == 1)
            #expect(stats?["commitMicros"]?["count"] == 25)
            #expect((stats?["syncMicros"]?["p99"]?.intValue ?? 0) > 0)
            #expect((stats?["lmdbCommitMicros"]?["count"]?.intValue ?? 0) >= 1)
            #expect(stats?["journalBacklogBytes"]?.intValue != nil)
        }
        let people = try await runProgram("reel", ["stats", "--socket", daemon.socketPath])
        #expect(people.status == 0)
        for row in ["commit latency", "sync latency", "LMDB commits", "journal backlog", "p99", "dispatches refused       1 (by code 1002: 1)", "subscription lag"] {
            #expect(people.output.contains(row), "reel stats lacks \(row): \(people.output)")
        }
        // (Closed before the stop: a peer that reads nothing holds a graceful shutdown for its 10 s limit.)
        close(stalled)
        #expect(try await daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: metricsSocket), "the metrics socket outlived a clean stop")
    }

    @Test func servesOverTCPAndRefusesOtherPathsAndMethods() async throws {
        let dir = try TemporaryDirectory()
        let port = try RawSocket.freePort()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--metrics", "127.0.0.1:\(port)"]
        )
        try await daemon.start()
        try await waitUntil("the metrics port", timeout: .seconds(10)) { (try? HTTPGet.request(.tcp(port: port))) != nil }
        let scraped = try HTTPGet.request(.tcp(port: port))
        #expect(scraped.status == 200)
        // (The probe `start` made to see the socket accept may not be closed on the server's side yet.)
        try await waitUntil("no connections") { HTTPGet.sample(try HTTPGet.request(.tcp(port: port)).body, "reel_connections") == 0 }
        #expect(try HTTPGet.request(.tcp(port: port), path: "/").status == 404)
        #expect(try HTTPGet.request(.tcp(port: port), method: "POST").status == 405)
        let head = try HTTPGet.request(.tcp(port: port), method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try await daemon.stop() == 0)
    }

    @Test func anAddressInUseIsAOneLineRefusal() async throws {
        let dir = try TemporaryDirectory()
        let taken = try RawSocket.listenTCP()
        defer { close(taken.descriptor) }
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--metrics", "127.0.0.1:\(taken.port)"]
        )
        let outcome = try await daemon.runToExit()
        #expect(outcome.status == 75)
        #expect(outcome.stderr.contains("metrics 127.0.0.1:\(taken.port) from flag --metrics is in use"), "\(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n").count == 1, "not one line: \(outcome.stderr)")
    }

    @Test func withoutTheFlagNothingListens() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        // Every TCP socket of the network namespace, by inode; none of them may be one of reeld's.
        let listening = try String(contentsOfFile: "/proc/\(daemon.processIdentifier)/net/tcp", encoding: .utf8)
            + (try String(contentsOfFile: "/proc/\(daemon.processIdentifier)/net/tcp6", encoding: .utf8))
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.processIdentifier)/fd")
        let sockets = descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.processIdentifier)/fd/\($0)") }
            .filter { $0.hasPrefix("socket:") }
        let inodes = Set(sockets.map { $0.dropFirst("socket:[".count).dropLast() }.map(String.init))
        let tcpInodes = Set(listening.split(separator: "\n").dropFirst().compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(9).first.map(String.init)
        })
        #expect(inodes.isDisjoint(with: tcpInodes), "reeld without --metrics holds a TCP socket")
        #expect(try await daemon.stop() == 0)
    }
}
