import Foundation
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// The client against a real `reeld` that dies with `kill -9`, seen through a ``SocketProxy`` that
/// holds back what the daemon sent just before dying: answers to committed dispatches and updates
/// the client never got. That is the hard case of a crash, made certain rather than left to timing.
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct DaemonCrashTests {
    @Test func keyedDispatchesInFlightDuringAKillNineAreRetriedAndAppliedExactlyOnce() async throws {
        let dir = try TemporaryDirectory("reel-client-crash")
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let proxy = try SocketProxy(listeningAt: dir.sub("proxy.sock"), forwardingTo: first.socketPath)
        defer { proxy.stop() }
        let client = try await ReelClient.connect(socketPath: proxy.path, configuration: .forTests)
        try await client.dispatch(Stock.set("/n", 0))

        let writers = 8, each = 40
        let load = KeyedWriters(client: client, writers: writers, each: each)
        await load.waitForAcknowledgements(writers * each / 4)
        // From now on the daemon's answers stay in the proxy: each writer ends up waiting for a
        // dispatch the daemon committed and answered, an answer the client will never read.
        proxy.holdReplies(true)
        try await waitUntil("every writer to wait for a committed dispatch") {
            let sent = proxy.requestLines
            guard sent.count - proxy.replyCount == writers else { return false }
            let dispatches = sent.filter { $0.contains(#""method":"dispatch""#) }.count
            let latest = try await TestConnection.open(socketPath: first.socketPath) { connection throws in
                try await connection.request(1, "get", ["path": "/n"])["result"]?["seq"]?.intValue
            }
            return latest == Int64(dispatches)
        }
        // The client's reconnections wait in the proxy's backlog until the next daemon is up.
        // (Not closed at once: see `aConnectionClosedAsSoonAsAcceptedFailsTheAttempt`.)
        proxy.pauseAccepting(true)
        _ = try await first.stop(signal: SIGKILL)
        try await proxy.dropConnections()
        proxy.holdReplies(false)
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()
        proxy.pauseAccepting(false)

        let duplicates = try await withDeadline(.seconds(60), "every dispatch to be answered") { try await load.outcome.value }
        // Seen from the outside: each dispatch in flight was sent again with its key.
        let keys = try proxy.requestLines.compactMap { line in
            try JSONValue(parsing: Array(line.utf8))["params"]?["idempotencyKey"]?.stringValue
        }
        let retried = Dictionary(keys.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }
        #expect(retried.count == writers, "retried keys: \(retried)")
        #expect(retried.values.allSatisfy { $0 == 2 })
        // Each of them had been committed before the kill, so each retry was answered as a duplicate.
        #expect(duplicates == writers, "\(duplicates) duplicates for \(writers) committed dispatches sent again")
        #expect(try await client.get(try JSONPointer("/n")).value == .int(Int64(writers * each)), "each dispatch applied exactly once")
        #expect(try await client.history(from: 1, limit: 1000).actions.count == writers * each + 1)
        await client.close()
        #expect(try await second.stop() == 0)
    }

    /// Updates committed but never delivered, a `kill -9`, more dispatches while the client is
    /// away: every mode resumes with exactly what it missed.
    @Test func everySubscriptionResumesAfterAKillNineWithAForcedGap() async throws {
        let dir = try TemporaryDirectory("reel-client-crash")
        let first = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await first.start()
        let proxy = try SocketProxy(listeningAt: dir.sub("proxy.sock"), forwardingTo: first.socketPath)
        defer { proxy.stop() }
        let client = try await ReelClient.connect(socketPath: proxy.path, configuration: .forTests)
        let counter = try JSONPointer("/n")
        let actions = try await client.subscribe(mode: .actions)
        let values = try await client.subscribe(counter, mode: .value)
        let patches = try await client.subscribe(.root, mode: .patch)
        let delivered: UInt64 = 10, undelivered: UInt64 = 20, total: UInt64 = 30  // n = seq - 1 at every seq

        let collectors = ModeCollectors(actions: actions, values: values, patches: patches, through: total)

        try await client.dispatch(Stock.set("/n", 0))
        for _ in 2...delivered { try await client.dispatch(Stock.increment()) }
        try await waitUntil("seq \(delivered) delivered in every mode") {
            [actions, values, patches].allSatisfy { $0.lastDeliveredSeq == delivered }
        }

        // Committed by another peer; their updates stop at the proxy and die with the daemon.
        proxy.holdReplies(true)
        try await TestConnection.open(socketPath: first.socketPath) { other throws in
            for seq in delivered + 1...undelivered {
                #expect(try await other.request(Int(seq), "dispatch", Params.dispatch("increment", ["path": "/n"]))["result"] == ["seq": .int(Int64(seq))])
            }
        }
        proxy.pauseAccepting(true)
        _ = try await first.stop(signal: SIGKILL)
        try await proxy.dropConnections()
        proxy.holdReplies(false)
        #expect([actions, values, patches].allSatisfy { $0.lastDeliveredSeq == delivered }, "the gap was not forced")

        // More while the client is away.
        let second = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await second.start()
        try await TestConnection.open(socketPath: second.socketPath) { other throws in
            for seq in undelivered + 1...total {
                #expect(try await other.request(Int(seq), "dispatch", Params.dispatch("increment", ["path": "/n"]))["result"] == ["seq": .int(Int64(seq))])
            }
        }
        proxy.pauseAccepting(false)
        try await waitUntil(
            "seq \(total) in every mode; delivered: \([actions, values, patches].map { $0.lastDeliveredSeq })," +
                " connected: \(client.isConnected), lines sent through the proxy: \(proxy.requestLines.suffix(8))",
            timeout: .seconds(30)
        ) {
            [actions, values, patches].allSatisfy { $0.lastDeliveredSeq == total }
        }

        #expect(try await collectors.actionSeqs.value == Array(1...total), "actions mode: every seq exactly once, in order")

        let updates = try await collectors.valueUpdates.value
        let seqs = updates.map(\.seq)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "value mode: seqs strictly increase: \(seqs)")
        #expect(updates.allSatisfy { $0.value?.intValue == Int64($0.seq) - 1 }, "value mode: each value is the one at its seq: \(updates)")
        #expect(updates.last == SubscriptionUpdate(seq: total, change: .value(.int(Int64(total) - 1))))

        let states = try await collectors.patchedStates.value
        let stateSeqs = states.map(\.seq)
        #expect(zip(stateSeqs, stateSeqs.dropFirst()).allSatisfy { $0 < $1 }, "patch mode: seqs strictly increase: \(stateSeqs)")
        #expect(states.allSatisfy { $0.value == ["n": .int(Int64($0.seq) - 1)] }, "patch mode: each patched state is the one at its seq")
        #expect(states.last?.seq == total)

        // Each subscription was resumed from where its delivery stopped.
        let resumed = try proxy.requestLines.map { try JSONValue(parsing: Array($0.utf8)) }
            .filter { $0["method"] == "subscribe" && $0["params"]?["since"] != nil }
        #expect(resumed.map { $0["params"]?["since"] } == Array(repeating: .int(Int64(delivered)), count: 3), "resubscriptions: \(resumed)")
        await client.close()
        #expect(try await second.stop() == 0)
    }
}

/// A socket that accepts a connection and closes it at once (a daemon dying just then, or a proxy
/// with nothing behind it): connecting must fail with ``ReelClientError/Code/connectionFailed``,
/// which a reconnecting client then retries.
///
/// A bug these tests found (issue 15), fixed in `ConnectionSupervisor.connect()`: when the close
/// was seen before the client registered the connection (`ClientCore.connectionOpened`),
/// `connectionLost` found no current connection and did nothing; the `hello` then waited forever
/// on a dead channel, and so did the reconnect loop — a client whose daemon crashed could stay
/// disconnected for good. Before the fix, 5 to 14 of these 20 attempts hung.
@Suite(.timeLimit(.minutes(3)), .heavy) struct ConnectionClosedAtOnceTests {
    @Test func aConnectionClosedAsSoonAsAcceptedFailsTheAttempt() async throws {
        let dir = try TemporaryDirectory("reel-client-crash")
        // Nothing listens upstream: the proxy closes each connection as soon as it accepts it.
        let proxy = try SocketProxy(listeningAt: dir.sub("proxy.sock"), forwardingTo: dir.sub("nothing.sock"))
        defer { proxy.stop() }
        let socketPath = proxy.path
        var hung = 0
        for attempt in 0..<20 {
            // Unstructured, so that a hung attempt cannot hang the test too; it is leaked.
            let outcome = AttemptOutcome()
            Task(executorPreference: TestThreads.shared) {
                outcome.set(await clientError { () throws(ReelClientError) in
                    try await ReelClient.connect(socketPath: socketPath, configuration: ReelClientConfiguration(reconnect: .disabled))
                })
            }
            do {
                // A hung attempt never ends; a slow one (a loaded machine: about 1.5 s each under a
                // build and four fuzzers) does, so the deadline is generous.
                try await waitUntil("attempt \(attempt) to end", timeout: .seconds(15)) { outcome.get() != nil }
            } catch is WaitTimedOut {
                hung += 1
                continue
            }
            let error = outcome.get() ?? nil
            #expect(error?.code == .connectionFailed, "attempt \(attempt): \(String(describing: error))")
        }
        #expect(hung == 0, "\(hung) of 20 attempts hung")
    }
}

/// How one connection attempt ended (`nil` while it runs; `.some(nil)` when it connected).
final class AttemptOutcome: @unchecked Sendable {
    // @unchecked: behind `lock`.
    private let lock = NSLock()
    private var outcome: ReelClientError??
    func set(_ error: ReelClientError?) { lock.withLock { outcome = .some(error) } }
    func get() -> ReelClientError?? { lock.withLock { outcome } }
}
