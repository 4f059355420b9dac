import Foundation
import ReelJSON
import ReelTestSupport
import Synchronization
import Testing

/// Several `reeld --shared-log` nodes on one machine, a real PostgreSQL server behind them, real
/// sockets and data directories: one history, whichever node takes a dispatch, through kills and
/// outages.
@Suite(.serialized, .timeLimit(.minutes(3)), .heavy(long: true, prepare: { _ = try await PostgresServer.shared() }))
struct SharedLogClusterTests {
    /// Nodes of one store: their own data directories and sockets, one shared log.
    final class Cluster: @unchecked Sendable {
        let directory: TemporaryDirectory
        let url: String
        var nodes: [SpawnedDaemon] = []

        /// Node `i` serves its metrics at `metricsSocket(i)`.
        init(url: String, nodes count: Int) throws {
            directory = try TemporaryDirectory("reel-cluster")
            self.url = url
            for index in 0..<count {
                nodes.append(SpawnedDaemon(
                    dataDirectory: directory.sub("node\(index)"), socketPath: directory.sub("node\(index).sock"),
                    extraArguments: ["--shared-log", url, "--metrics", "unix:" + directory.sub("metrics\(index).sock")]
                ))
            }
        }

        func metrics(_ index: Int) throws -> String {
            try HTTPGet.request(.unix(path: directory.sub("metrics\(index).sock"))).body
        }

        func start() async throws {
            for node in nodes { try await node.start() }
        }

        func stop() async {
            for node in nodes { _ = try? await node.stop() }
        }
    }

    /// What a dispatcher learned: which of its dispatches were acknowledged with which seq, and
    /// the error codes of the others.
    struct Outcome: Sendable {
        var acknowledged: [String: UInt64] = [:]
        var refusedCodes: [Int64] = []
        /// Dispatches sent (each acknowledged, refused, or cut short by the connection's end).
        var sent = 0
    }

    /// What the load of a test shares between its tasks: whether to go on, whether PostgreSQL is
    /// stopped (an outage), and how many dispatches each node acknowledged so far.
    final class LoadState: Sendable {
        let running = Atomic<Bool>(true)
        let outage = Atomic<Bool>(false)
        let outcomes = Mutex<[Outcome]>([])
        private let acknowledgedBySocket = Mutex<[String: Int]>([:])

        func acknowledged(at socket: String) -> Int { acknowledgedBySocket.withLock { $0[socket] ?? 0 } }
        func countAcknowledged(at socket: String) { acknowledgedBySocket.withLock { $0[socket, default: 0] += 1 } }

        /// Waits until the outage ends (or the load does).
        func waitForTheOutageToEnd() async throws {
            try await waitUntil("the end of the outage", timeout: .seconds(120)) {
                !outage.load(ordering: .relaxed) || !running.load(ordering: .relaxed)
            }
        }
    }

    /// Dispatches `count` actions, one at a time, each setting `/m-<tag>-<i>`, until done or
    /// the connection ends (a killed node). With a `load`, also until the load stops, counting
    /// the acknowledged dispatches; and a refusal during its outage means the dispatcher found
    /// it: it ends there, and its caller waits for the outage to end rather than retry at once.
    static func dispatcher(_ socket: String, tag: String, count: Int = .max, load: LoadState? = nil) async -> Outcome {
        var outcome = Outcome()
        _ = try? await TestConnection.open(socketPath: socket) { connection in
            for i in 0..<count {
                if let load, !load.running.load(ordering: .relaxed) { break }
                let mark = "\(tag)-\(i)"
                let params: JSONValue = ["action": ["type": "set", "payload": ["path": .string("/m-\(mark)"), "value": .int(Int64(i))]]]
                outcome.sent += 1
                let response = try await connection.request(i, "dispatch", params)
                if let seq = response["result"]?["seq"]?.intValue {
                    outcome.acknowledged[mark] = UInt64(seq)
                    load?.countAcknowledged(at: socket)
                } else if let code = response["error"]?["code"]?.intValue {
                    outcome.refusedCodes.append(code)
                    if let load, load.outage.load(ordering: .relaxed) { break }
                }
            }
        }
        return outcome
    }

    /// The whole history a node serves, page by page.
    static func history(_ socket: String) async throws -> [JSONValue] {
        try await TestConnection.open(socketPath: socket) { connection in
            var actions: [JSONValue] = []
            var from: Int64 = 1
            var id = 0
            while true {
                id += 1
                let page = try await connection.request(id, "history", ["from": .int(from), "limit": 1000])
                guard case .array(let got)? = page["result"]?["actions"] else { throw SpawnError("history failed: \(page)") }
                actions += got
                guard let next = page["result"]?["next"]?.intValue else { return actions }
                from = next
            }
        }
    }

    static func call(_ socket: String, _ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        try await TestConnection.open(socketPath: socket) { try await $0.request(1, method, params) }
    }

    static func seq(_ socket: String) async throws -> UInt64 {
        UInt64(try await call(socket, "hello")["result"]?["seq"]?.intValue ?? -1)
    }

    /// The shared log's latest seq once the load is over: the largest any node has (the node
    /// that appended the last action has it; the others follow it when they can, so asking only
    /// one of them could give a seq the others have already passed).
    static func latestSeq(_ cluster: Cluster) async throws -> UInt64 {
        try await cluster.nodes.asyncMap { try await seq($0.socketPath) }.max() ?? 0
    }

    /// Waits until every node has `latest` and checks they serve one history: the same actions,
    /// seqs 1…latest without a gap, each acknowledged dispatch exactly once at its seq, and the
    /// same state.
    static func expectOneHistory(_ cluster: Cluster, acknowledged: [String: UInt64], latest: UInt64) async throws {
        for node in cluster.nodes {
            try await waitUntil("\(node.socketPath) reaches seq \(latest)", timeout: .seconds(30)) {
                try await seq(node.socketPath) == latest
            }
        }
        let histories = try await cluster.nodes.asyncMap { try await history($0.socketPath) }
        let first = histories[0]
        #expect(first.map { $0["seq"]?.intValue } == (1...Int64(latest)).map { $0 })
        for other in histories.dropFirst() { #expect(other == first, "two nodes serve different histories") }
        var seen: [String: [UInt64]] = [:]
        for action in first {
            guard let path = action["payload"]?["path"]?.stringValue, path.hasPrefix("/m-"),
                let seq = action["seq"]?.intValue
            else { continue }
            seen[String(path.dropFirst("/m-".count)), default: []].append(UInt64(seq))
        }
        for (mark, seq) in acknowledged {
            #expect(seen[mark] == [seq], "acknowledged \(mark) at \(seq), logged at \(seen[mark] ?? [])")
        }
        let states = try await cluster.nodes.asyncMap { try await call($0.socketPath, "get")["result"] }
        for state in states.dropFirst() { #expect(state == states[0]) }
    }

    @Test func threeNodesWithConcurrentDispatchersServeOneGaplessHistory() async throws {
        let server = try await PostgresServer.shared()
        let cluster = try Cluster(url: try await server.createDatabase("three_nodes"), nodes: 3)
        try await cluster.start()
        // A subscriber of node 2 sees every action, in order, whichever node took it.
        let subscriber = Task(executorPreference: TestThreads.shared) {
            try await TestConnection.open(socketPath: cluster.nodes[2].socketPath) { connection in
                let answer = try await connection.request(1, "subscribe", ["mode": "actions", "since": 0])
                guard answer["result"]?["subscription"] != nil else { throw SpawnError("subscribe failed: \(answer)") }
                var seqs: [Int64] = []
                while seqs.last != 360 {
                    let update = try await connection.receive()
                    guard case .array(let actions)? = update["params"]?["actions"] else { continue }
                    seqs += actions.compactMap { $0["seq"]?.intValue }
                }
                return seqs
            }
        }
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for (index, node) in cluster.nodes.enumerated() {
                for client in 0..<3 {
                    group.addTask { await Self.dispatcher(node.socketPath, tag: "n\(index)c\(client)", count: 40) }
                }
            }
            return await group.reduce(into: [Outcome]()) { $0.append($1) }
        }
        let acknowledged = outcomes.reduce(into: [String: UInt64]()) { $0.merge($1.acknowledged) { a, _ in a } }
        #expect(acknowledged.count == 360, "refused: \(outcomes.flatMap(\.refusedCodes))")
        #expect(Set(acknowledged.values).count == acknowledged.count, "two dispatches were given one seq")
        try await Self.expectOneHistory(cluster, acknowledged: acknowledged, latest: 360)
        #expect(try await subscriber.value == Array(1...360))
        let hello = try await Self.call(cluster.nodes[1].socketPath, "hello")
        #expect(hello["result"]?["sharedLog"]?["lag"] == 0)
        #expect(hello["result"]?["sharedLog"]?["reachable"] == true)
        #expect(hello["result"]?["sharedLog"]?["location"]?.stringValue?.hasPrefix("postgres://reel@127.0.0.1") == true)
        let stats = try await Self.call(cluster.nodes[2].socketPath, "stats")
        #expect(stats["result"]?["sharedLog"]?["followed"]?.intValue ?? 0 > 0)
        await cluster.stop()
    }

    @Test func expectedSeqAndIdempotencyKeysHoldAcrossNodes() async throws {
        let server = try await PostgresServer.shared()
        let cluster = try Cluster(url: try await server.createDatabase("across_nodes"), nodes: 3)
        try await cluster.start()
        let (a, b, c) = (cluster.nodes[0].socketPath, cluster.nodes[1].socketPath, cluster.nodes[2].socketPath)
        let keyed: JSONValue = ["actions": [["type": "set", "payload": ["path": "/order", "value": 17]], ["type": "increment", "payload": ["path": "/count"]]], "idempotencyKey": "order-17"]
        #expect(try await Self.call(a, "dispatch", keyed)["result"] == ["seqs": [1, 2]])
        // The same key on the other nodes: the first answer, nothing applied again.
        #expect(try await Self.call(b, "dispatch", keyed)["result"] == ["duplicate": true, "seqs": [1, 2]])
        let sameKeyOtherAction: JSONValue = ["action": ["type": "set", "payload": ["path": "/order", "value": 99]], "idempotencyKey": "order-17"]
        #expect(try await Self.call(c, "dispatch", sameKeyOtherAction)["result"] == ["duplicate": true, "seq": 1])
        // expectedSeq: the latest seq is 2 wherever it is asked.
        let guarded: JSONValue = ["action": ["type": "set", "payload": ["path": "/step", "value": 1]], "expectedSeq": 2]
        #expect(try await Self.call(b, "dispatch", guarded)["result"] == ["seq": 3])
        let stale = try await Self.call(c, "dispatch", guarded)
        #expect(stale["error"]?["code"] == 1003)
        #expect(stale["error"]?["data"] == ["seq": 3], "\(stale)")
        try await Self.expectOneHistory(cluster, acknowledged: [:], latest: 3)
        #expect(try await Self.call(a, "get")["result"]?["value"] == ["order": 17, "count": 1, "step": 1])
        await cluster.stop()
    }

    @Test func aNodeKilledUnderLoadCatchesUpAfterRestart() async throws {
        let server = try await PostgresServer.shared()
        let cluster = try Cluster(url: try await server.createDatabase("kill_nine"), nodes: 3)
        try await cluster.start()
        let victim = cluster.nodes[0]
        // The other nodes' dispatchers go on until each of them has acknowledged 20 more after
        // the kill: the load spans it, whatever the machine's pace.
        let load = LoadState()
        async let killedSide = Self.dispatcher(victim.socketPath, tag: "victim", count: 100_000)
        async let others = withTaskGroup(of: Outcome.self) { group in
            for (index, node) in cluster.nodes.enumerated().dropFirst() {
                group.addTask { await Self.dispatcher(node.socketPath, tag: "n\(index)", load: load) }
            }
            return await group.reduce(into: [Outcome]()) { $0.append($1) }
        }
        let otherSockets = cluster.nodes.dropFirst().map(\.socketPath)
        try await waitUntil("the victim acknowledged some", timeout: .seconds(30)) { try await Self.seq(victim.socketPath) > 30 }
        let beforeKill = otherSockets.map { load.acknowledged(at: $0) }
        #expect(try await victim.stop(signal: SIGKILL) == SIGKILL)  // Process reports the signal itself
        try await waitUntil("the other nodes to acknowledge 20 dispatches each after the kill", timeout: .seconds(60)) {
            zip(otherSockets, beforeKill).allSatisfy { load.acknowledged(at: $0) >= $1 + 20 }
        }
        load.running.store(false, ordering: .relaxed)
        let (victimOutcome, othersOutcome) = await (killedSide, others)
        #expect(victimOutcome.acknowledged.count > 0)
        try await victim.start()
        var acknowledged = victimOutcome.acknowledged
        for outcome in othersOutcome { acknowledged.merge(outcome.acknowledged) { a, _ in a } }
        #expect(othersOutcome.allSatisfy { $0.acknowledged.count == $0.sent }, "the other nodes refused or lost some: \(othersOutcome.map(\.refusedCodes))")
        let latest = try await Self.latestSeq(cluster)
        try await Self.expectOneHistory(cluster, acknowledged: acknowledged, latest: latest)
        await cluster.stop()
    }

    @Test func aNodeKilledBetweenPostgresAndItsOwnCopyLeavesTheActionToFollowingAndARetryIsADuplicate() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.createDatabase("between_commits")
        let directory = try TemporaryDirectory("reel-cluster")
        let other = SpawnedDaemon(dataDirectory: directory.sub("b"), socketPath: directory.sub("b.sock"), extraArguments: ["--shared-log", url])
        // The third commit of node a dies after PostgreSQL took the group, before a's journal has it.
        let dying = SpawnedDaemon(
            dataDirectory: directory.sub("a"), socketPath: directory.sub("a.sock"), extraArguments: ["--shared-log", url],
            environment: ["REEL_CRASH_POINT": "commit.before@3"]
        )
        try await other.start()
        try await dying.start()
        func set(_ value: Int64, key: String) -> JSONValue {
            ["action": ["type": "set", "payload": ["path": "/v", "value": .int(value)]], "idempotencyKey": .string(key)]
        }
        #expect(try await Self.call(dying.socketPath, "dispatch", set(1, key: "k1"))["result"] == ["seq": 1])
        #expect(try await Self.call(dying.socketPath, "dispatch", set(2, key: "k2"))["result"] == ["seq": 2])
        let unanswered = try? await Self.call(dying.socketPath, "dispatch", set(3, key: "k3"))
        #expect(unanswered?["result"] == nil, "answered although the node died before its copy had it: \(String(describing: unanswered))")
        try await waitUntil("node a dies at the crash point") { dying.processIdentifier == 0 }
        // The action is in the shared log all the same: the other node follows it.
        try await waitUntil("b follows seq 3", timeout: .seconds(20)) { try await Self.seq(other.socketPath) == 3 }
        let restarted = SpawnedDaemon(dataDirectory: directory.sub("a"), socketPath: directory.sub("a.sock"), extraArguments: ["--shared-log", url])
        try await restarted.start()
        // The client's retry with the same key: the first dispatch's seq, nothing applied twice.
        #expect(try await Self.call(restarted.socketPath, "dispatch", set(3, key: "k3"))["result"] == ["duplicate": true, "seq": 3])
        #expect(try await Self.history(restarted.socketPath) == Self.history(other.socketPath))
        #expect(try await Self.call(restarted.socketPath, "get")["result"] == ["seq": 3, "value": ["v": 3]])
        _ = try await restarted.stop()
        _ = try await other.stop()
    }

    @Test func postgresStoppedUnderLoadRefusesThenResumesAndLosesNothing() async throws {
        // A server of its own: this one is stopped.
        let server = try await PostgresServer.launch()
        defer { server.shutdown() }
        let cluster = try Cluster(url: server.url, nodes: 2)
        try await cluster.start()
        let shared = LoadState()
        let load = Task(executorPreference: TestThreads.shared) {
            await withTaskGroup(of: Void.self) { group in
                for (index, node) in cluster.nodes.enumerated() {
                    group.addTask {
                        var round = 0
                        while shared.running.load(ordering: .relaxed) {
                            if shared.outage.load(ordering: .relaxed) { try? await shared.waitForTheOutageToEnd() }
                            round += 1
                            let outcome = await Self.dispatcher(node.socketPath, tag: "n\(index)r\(round)", count: 20, load: shared)
                            shared.outcomes.withLock { $0.append(outcome) }
                        }
                    }
                }
            }
        }
        try await waitUntil("some dispatches before the outage", timeout: .seconds(30)) { try await Self.seq(cluster.nodes[0].socketPath) > 20 }
        // From here, a dispatcher refused (it found the outage) waits for the restart.
        shared.outage.store(true, ordering: .relaxed)
        try await server.stop(mode: .fast)
        try await waitUntil("a dispatch refused with 1010 during the outage", timeout: .seconds(30)) {
            shared.outcomes.withLock { $0.contains { $0.refusedCodes.contains(1010) } }
        }
        // Reads are served from each node's copy meanwhile, and the node says the log is unreachable.
        let during = try await Self.call(cluster.nodes[1].socketPath, "get")
        #expect(during["result"]?["seq"] != nil)
        // (Node 1 says so once one of its own calls failed: its dispatcher's next one.)
        try await waitUntil("node 1 says the shared log is unreachable", timeout: .seconds(30)) {
            try await Self.call(cluster.nodes[1].socketPath, "hello")["result"]?["sharedLog"]?["reachable"] == false
        }
        #expect(HTTPGet.sample(try cluster.metrics(1), "reel_shared_log_reachable") == 0)
        try await server.start()
        shared.outage.store(false, ordering: .relaxed)
        let resumedAt = try await Self.seq(cluster.nodes[0].socketPath)
        try await waitUntil("dispatches acknowledged again after the outage", timeout: .seconds(30)) {
            try await Self.seq(cluster.nodes[0].socketPath) > resumedAt + 20
        }
        shared.running.store(false, ordering: .relaxed)
        await load.value
        let all = shared.outcomes.withLock { $0 }
        let acknowledged = all.reduce(into: [String: UInt64]()) { $0.merge($1.acknowledged) { a, _ in a } }
        #expect(Set(all.flatMap(\.refusedCodes)).isSubset(of: [1010]))
        let latest = try await Self.latestSeq(cluster)
        try await Self.expectOneHistory(cluster, acknowledged: acknowledged, latest: latest)
        let scraped = try cluster.metrics(1)
        #expect(HTTPGet.sample(scraped, "reel_shared_log_reachable") == 1)
        #expect(HTTPGet.sample(scraped, "reel_shared_log_lag_seqs") == 0)
        #expect(HTTPGet.sample(scraped, "reel_shared_log_latest_seq") == Double(latest))
        #expect(HTTPGet.sample(scraped, "reel_shared_log_refusing") == 0)
        await cluster.stop()
    }

    @Test func aNodeWhoseCopyDisagreesRefusesToStart() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.createDatabase("disagree")
        let cluster = try Cluster(url: url, nodes: 1)
        try await cluster.start()
        _ = try await Self.call(cluster.nodes[0].socketPath, "dispatch", ["action": ["type": "set", "payload": ["path": "/a", "value": 1]]])
        await cluster.stop()
        // Another data directory with its own action 1, never part of the cluster.
        let alone = SpawnedDaemon(dataDirectory: cluster.directory.sub("alone"), socketPath: cluster.directory.sub("alone.sock"))
        try await alone.start()
        _ = try await Self.call(alone.socketPath, "dispatch", ["action": ["type": "set", "payload": ["path": "/a", "value": 2]]])
        _ = try await alone.stop()
        let joining = SpawnedDaemon(
            dataDirectory: alone.dataDirectory, socketPath: alone.socketPath, extraArguments: ["--shared-log", url]
        )
        let (status, stderr) = try await joining.runToExit()
        #expect(status == 65)
        #expect(stderr.contains("disagrees with the shared log"), "\(stderr)")
        #expect(stderr.contains("differs from the shared log's"), "\(stderr)")
    }

    @Test func aNodeStartsWithoutPostgresServesReadsAndRefusesDispatches() async throws {
        let dir = try TemporaryDirectory()
        let nowhere = "postgres://reel@127.0.0.1:\(try PostgresServer.freePort())/reel"
        let node = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("s.sock"), extraArguments: ["--shared-log", nowhere])
        try await node.start()
        let hello = try await Self.call(node.socketPath, "hello")
        #expect(hello["result"]?["sharedLog"]?["reachable"] == false, "\(hello)")
        #expect(hello["result"]?["sharedLog"]?["error"]?.stringValue?.contains("connection refused") == true, "\(hello)")
        let refused = try await Self.call(node.socketPath, "dispatch", ["action": ["type": "set", "payload": ["path": "/a", "value": 1]]])
        #expect(refused["error"]?["code"] == 1010, "\(refused)")
        #expect(try await Self.call(node.socketPath, "get")["result"] == ["seq": 0, "value": [:]])
        #expect(try await node.stop() == 0)
    }

    @Test func aBadSharedLogURLIsRefusedAtStart() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("s.sock"), extraArguments: ["--shared-log", "mysql://x"])
        let (status, stderr) = try await daemon.runToExit()
        #expect(status == 78)
        #expect(stderr.contains("shared-log"), "\(stderr)")
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
