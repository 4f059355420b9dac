import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// A shared log in memory, with the contract of ``SharedLog``: for the writer's logic (conflicts,
/// following, agreement, seeding, outages) without a server. The PostgreSQL one is tested against
/// a real server in ReelPostgresLogTests, and whole daemons on it in ReeldTests.
final class InMemorySharedLog: SharedLog, @unchecked Sendable {
    private struct Contents {
        var entries: [SharedLogEntry] = []
        var keys: Set<String> = []
        var reducer: ReducerIdentity?
        var available = true
        var watchers: [@Sendable (UInt64?) -> Void] = []
        var appends = 0
        /// Appends of "another node" slipped in before each of the next appends, while no turn is held.
        var interlopers = 0
        var inTurn = false
        var turnsTaken = 0
    }

    private let contents = Mutex(Contents())
    /// When set, wake-ups are not delivered (a node that has not heard of others' appends yet).
    let quiet = Atomic<Bool>(false)
    let location = "memory://test"

    var available: Bool {
        get { contents.withLock { $0.available } }
        set { contents.withLock { $0.available = newValue } }
    }

    var entries: [SharedLogEntry] { contents.withLock { $0.entries } }
    var turnsTaken: Int { contents.withLock { $0.turnsTaken } }

    /// Before each of the next `count` appends (outside a turn), another node appends first.
    func interlope(_ count: Int) { contents.withLock { $0.interlopers = count } }

    func beginExclusiveTurn() throws(SharedLogError) {
        try check()
        contents.withLock { $0.inTurn = true; $0.turnsTaken += 1 }
    }

    func endExclusiveTurn() { contents.withLock { $0.inTurn = false } }

    /// An entry as another node would have appended it: a `set` of `/other`.
    static func othersEntry(seq: UInt64) -> SharedLogEntry {
        let envelope = ActionEnvelope(
            seq: seq, action: Action(type: "set", payload: ["path": "/other", "value": .int(Int64(seq))]),
            time: .now(), peer: Peer(uid: 1, gid: 1, pid: 1)
        )
        return SharedLogEntry(seq: seq, record: EnvelopeCodec.encode(envelope), type: "set")
    }
    var appends: Int { contents.withLock { $0.appends } }

    private func check() throws(SharedLogError) {
        guard available else { throw SharedLogError(.unavailable, "the test's shared log is down") }
    }

    func prepare(reducer: ReducerIdentity) throws(SharedLogError) -> ReducerIdentity {
        try check()
        return contents.withLock { contents in
            if contents.reducer == nil { contents.reducer = reducer }
            return contents.reducer!
        }
    }

    func append(_ entries: [SharedLogEntry]) throws(SharedLogError) -> SharedLogAppendOutcome {
        try check()
        let (outcome, latest, watchers) = contents.withLock { contents -> (SharedLogAppendOutcome, UInt64, [@Sendable (UInt64?) -> Void]) in
            contents.appends += 1
            if contents.interlopers > 0 && !contents.inTurn {
                contents.interlopers -= 1
                contents.entries.append(Self.othersEntry(seq: UInt64(contents.entries.count) + 1))
            }
            let latest = UInt64(contents.entries.count)
            let claimed = entries.compactMap(\.claimedKey)
            if let first = entries.first?.seq, first > latest + 1 {
                return (.conflict, first, [])  // a gap: thrown below, as the PostgreSQL log does
            }
            guard entries.first?.seq == latest + 1, contents.keys.isDisjoint(with: claimed) else { return (.conflict, latest, []) }
            contents.entries += entries
            contents.keys.formUnion(claimed)
            return (.appended, UInt64(contents.entries.count), contents.watchers)
        }
        if outcome == .conflict, latest > UInt64(self.entries.count) {
            throw SharedLogError(.incompatible, "entry \(latest) would leave a gap after \(self.entries.count)")
        }
        if outcome == .appended, !quiet.load(ordering: .relaxed) {
            for watcher in watchers { watcher(latest) }
        }
        return outcome
    }

    func entries(after seq: UInt64, limit: Int) throws(SharedLogError) -> [SharedLogEntry] {
        try check()
        return contents.withLock { Array($0.entries.dropFirst(Int(seq)).prefix(limit)) }
    }

    func latestSeq() throws(SharedLogError) -> UInt64 {
        try check()
        return contents.withLock { UInt64($0.entries.count) }
    }

    func watch(_ wake: @escaping @Sendable (UInt64?) -> Void) {
        contents.withLock { $0.watchers.append(wake) }
    }

    /// Drops the entries after `seq`, as a failover to a standby that lacked them would.
    func lose(after seq: Int) {
        contents.withLock { contents in
            for entry in contents.entries.dropFirst(seq) {
                if let key = entry.claimedKey { contents.keys.remove(key) }
            }
            contents.entries.removeLast(contents.entries.count - seq)
        }
    }

    /// Wakes every node, as a poll would.
    func poll() {
        for watcher in contents.withLock({ $0.watchers }) { watcher(nil) }
    }

    func close() {}
}

@Suite(.heavy) struct SharedLogWriterTests {
    func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    func node(_ dir: borrowing TemporaryDirectory, _ log: InMemorySharedLog) throws -> Store<JSONValue> {
        var options = StoreOptions()
        options.sharedLog = log
        return try Store(path: dir.path, definition: .stock, options: options)
    }

    func history(_ store: Store<JSONValue>) throws -> [ActionEnvelope] {
        var envelopes: [ActionEnvelope] = []
        try store.directory.forEachEnvelope(from: 1) { envelopes.append($0); return true }
        return envelopes
    }

    @Test func twoNodesFoldTheSameHistory() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        #expect(try await a.dispatch(set("/a", 1)).seq == 1)
        #expect(try await b.dispatch(set("/b", 2)).seq == 2)
        #expect(try await a.dispatch(batch: [set("/c", 3), set("/d", 4)]).seqs == 3...4)
        try await waitUntil("a.snapshot.seq == 4 && b.snapshot.seq == 4") { a.snapshot.seq == 4 && b.snapshot.seq == 4 }
        #expect(a.snapshot.state == ["a": 1, "b": 2, "c": 3, "d": 4])
        #expect(b.snapshot.state == a.snapshot.state)
        #expect(try history(a) == history(b))
        #expect(log.entries.map(\.seq) == [1, 2, 3, 4])
        try await waitUntil("b counts what it followed") { b.statistics.sharedLogFollowed == 3 }
        await a.close()
        await b.close()
        // Each node's change index has every action, its own and those it followed.
        for node in [a, b] {
            #expect(node.timeline.indexedThrough() == 4)
            for (path, seqs) in [("/a", [1]), ("/b", [2]), ("/c", [3]), ("/d", [4])] as [(String, [UInt64])] {
                #expect(try node.timeline.changedSeqs(path: JSONPointer(path)).seqs == seqs, "\(path)")
            }
        }
    }

    @Test func theFirstContactWithAnEmptyLogFindsItReachable() async throws {
        let dir = try TemporaryDirectory()
        let store = try node(dir, InMemorySharedLog())
        let status = try #require(await store.sharedLogFirstContact())
        #expect(status.reachable == true)
        #expect(status.refusal == nil)
        #expect(status.latestSeq == 0)
        await store.close()
    }

    @Test func aNodeFarBehindAnswersWhileItCatchesUpInSteps() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log)
        for round in 0..<5 {
            let batch = (0..<5_000).map { set("/r\(round)", .int(Int64($0))) }
            _ = try await a.dispatch(batch: batch)
        }
        let b = try node(dirB, log)
        // The first step follows at most 10 pages of 1,000: b answers before it has all 25,000.
        let first = try #require(await b.sharedLogFirstContact())
        #expect(first.reachable == true)
        try await waitUntil("b follows to the end") { b.snapshot.seq == 25_000 }
        #expect(b.snapshot.state == a.snapshot.state)
        // (Counted just after each publication.)
        try await waitUntil("b counts what it followed") { b.statistics.sharedLogFollowed == 25_000 }
        await a.close()
        await b.close()
    }

    @Test func aNodeThatKeepsLosingTakesAnExclusiveTurn() async throws {
        let log = InMemorySharedLog()
        let dir = try TemporaryDirectory()
        let store = try node(dir, log)
        _ = await store.sharedLogFirstContact()
        log.interlope(9)
        // Another node gets in first 8 times; then this node's turn keeps the 9th out.
        #expect(try await store.dispatch(set("/mine", 1)).seq == 9)
        #expect(log.turnsTaken == 1)
        #expect(store.statistics.sharedLogConflicts == 8)
        #expect(store.snapshot.state == ["other": 8, "mine": 1])
        // Outside the turn the other node goes on: its 9th append comes first.
        #expect(try await store.dispatch(set("/mine", 2)).seq == 11)
        #expect(log.turnsTaken == 1)
        await store.close()
    }

    @Test func aNodeBehindLosesTheRaceFollowsAndEvaluatesAgain() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        _ = await a.sharedLogFirstContact()
        _ = await b.sharedLogFirstContact()
        log.quiet.store(true, ordering: .relaxed)  // b does not hear of a's appends
        #expect(try await a.dispatch(Action(type: "increment", payload: ["path": "/n", "by": 1])).seq == 1)
        #expect(try await a.dispatch(Action(type: "increment", payload: ["path": "/n", "by": 1])).seq == 2)
        #expect(b.snapshot.seq == 0)
        // b evaluates against seq 0, loses at seq 1, follows, and the increment lands on 2.
        #expect(try await b.dispatch(Action(type: "increment", payload: ["path": "/n", "by": 10])).seq == 3)
        #expect(b.snapshot.state == ["n": 12])
        #expect(b.statistics.sharedLogConflicts == 1)
        #expect(try history(b).map(\.seq) == [1, 2, 3])
        await a.close()
        await b.close()
    }

    @Test func expectedSeqIsJudgedAgainstTheSharedLogNotTheLocalCopy() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        _ = await b.sharedLogFirstContact()
        log.quiet.store(true, ordering: .relaxed)
        _ = try await a.dispatch(set("/x", 1))
        // b's copy is at 0, the log at 1: expectedSeq 1 is right, 0 is stale.
        #expect(try await b.dispatch(set("/y", 2), expectedSeq: 1).seq == 2)
        await #expect(throws: StoreError.self) { try await b.dispatch(set("/y", 3), expectedSeq: 1) }
        do {
            _ = try await a.dispatch(set("/z", 4), expectedSeq: 1)
            Issue.record("a stale expectedSeq was accepted")
        } catch {
            #expect(error.code == .seqMismatch)
            #expect(error.currentSeq == 2)
        }
        await a.close()
        await b.close()
    }

    @Test func idempotencyKeysAreGlobal() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        _ = await b.sharedLogFirstContact()
        log.quiet.store(true, ordering: .relaxed)
        let first = try await a.dispatch(batch: [set("/k", 1), set("/l", 2)], idempotencyKey: "order-17")
        #expect(first == DispatchResult(seqs: 1...2))
        let again = try await b.dispatch(set("/k", 99), idempotencyKey: "order-17")
        #expect(again == DispatchResult(seqs: 1...2, duplicate: true))
        #expect(b.snapshot.state == ["k": 1, "l": 2])
        #expect(try b.directory.dedupRecord(forKey: "order-17") == DedupRecord(firstSeq: 1, count: 2))
        #expect(log.entries.count == 2)
        await a.close()
        await b.close()
    }

    @Test func anUnreachableLogRefusesDispatchesAndServesReads() async throws {
        let log = InMemorySharedLog()
        let dir = try TemporaryDirectory()
        let store = try node(dir, log)
        _ = try await store.dispatch(set("/a", 1))
        log.available = false
        do {
            _ = try await store.dispatch(set("/a", 2))
            Issue.record("a dispatch was acknowledged without the shared log")
        } catch {
            #expect(error.code == .storage)
            // Refused at the append, or before it when the node already knew the log was down.
            #expect(
                error.message.contains("the shared log did not take the actions") || error.message.contains("the shared log is unreachable"),
                "\(error.message)"
            )
        }
        #expect(store.snapshot.state == ["a": 1])
        #expect(store.sharedLogStatus?.reachable == false)
        log.available = true
        #expect(try await store.dispatch(set("/a", 3)).seq == 2)
        #expect(store.sharedLogStatus?.reachable == true)
        #expect(store.snapshot.state == ["a": 3])
        await store.close()
    }

    @Test func aCopyThatDisagreesRefusesDispatchesAndSaysWhy() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        do {
            let a = try node(dirA, log)
            _ = try await a.dispatch(set("/a", 1))
            await a.close()
        }
        do {
            // b has its own, different action 1 before it ever joins.
            let alone = try Store(path: dirB.path, definition: .stock)
            _ = try await alone.dispatch(set("/a", 2))
            await alone.close()
        }
        let b = try node(dirB, log)
        let status = try #require(await b.sharedLogFirstContact())
        #expect(status.refusal?.contains("this node's action at seq 1 differs from the shared log's") == true, "\(status)")
        await #expect(throws: StoreError.self) { try await b.dispatch(set("/b", 1)) }
        #expect(log.entries.count == 1)
        await b.close()
    }

    @Test func aCopyAheadOfTheLogRefuses() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        do {
            let a = try node(dirA, log)
            _ = try await a.dispatch(set("/a", 1))
            _ = try await a.dispatch(set("/a", 2))
            await a.close()
        }
        // A log that lost its last entry (restored from an older backup, say).
        let shorter = InMemorySharedLog()
        _ = try shorter.prepare(reducer: StoreDefinition<JSONValue>.stock.identity)
        _ = try shorter.append([log.entries[0]])
        let again = try node(dirA, shorter)
        let status = try #require(await again.sharedLogFirstContact())
        #expect(status.refusal?.contains("has actions up to seq 2 but the shared log") == true, "\(status)")
        await again.close()
    }

    @Test func aLogThatLostWhatThisNodeHasIsFoundOutAtTheNextAppend() async throws {
        let log = InMemorySharedLog()
        let dir = try TemporaryDirectory()
        let store = try node(dir, log)
        _ = try await store.dispatch(set("/a", 1))
        _ = try await store.dispatch(set("/a", 2))
        log.lose(after: 1)
        do {
            _ = try await store.dispatch(set("/a", 3))
            Issue.record("appended after a gap")
        } catch {
            #expect(error.code == .storage)
        }
        do {
            _ = try await store.dispatch(set("/a", 4))
            Issue.record("a node ahead of the log went on dispatching")
        } catch {
            #expect(error.message.contains("has actions up to seq 2 but the shared log"), "\(error.message)")
        }
        #expect(store.sharedLogStatus?.refusal != nil)
        #expect(log.entries.count == 1)
        await store.close()
    }

    @Test func anEmptyLogIsSeededWithAnExistingStoresHistory() async throws {
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        do {
            let alone = try Store(path: dirA.path, definition: .stock)
            _ = try await alone.dispatch(set("/a", 1), idempotencyKey: "k1")
            _ = try await alone.dispatch(batch: [set("/b", 2), set("/c", 3)], idempotencyKey: "k2")
            await alone.close()
        }
        let log = InMemorySharedLog()
        let a = try node(dirA, log)
        #expect(await a.sharedLogFirstContact()?.refusal == nil)
        #expect(log.entries.map(\.seq) == [1, 2, 3])
        #expect(log.entries.map(\.claimedKey) == ["k1", "k2", nil])
        let b = try node(dirB, log)
        try await waitUntil("b.snapshot.seq == 3") { b.snapshot.seq == 3 }
        #expect(b.snapshot.state == ["a": 1, "b": 2, "c": 3])
        #expect(try b.directory.dedupRecord(forKey: "k2") == DedupRecord(firstSeq: 2, count: 2))
        await a.close()
        await b.close()
    }

    @Test func aFollowedRevertRestoresTheSameState() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        _ = try await a.dispatch(set("/a", 1))
        _ = try await a.dispatch(set("/a", 2))
        _ = try await a.dispatch(Action(type: "@revert", payload: ["to": 1]))
        _ = try await a.dispatch(set("/b", 3))
        try await waitUntil("b.snapshot.seq == 4") { b.snapshot.seq == 4 }
        #expect(b.snapshot.state == ["a": 1, "b": 3])
        #expect(a.snapshot.state == b.snapshot.state)
        await a.close()
        await b.close()
    }

    @Test func aNodeThatMissedWakeUpsCatchesUpOnThePoll() async throws {
        let log = InMemorySharedLog()
        let dirA = try TemporaryDirectory(), dirB = try TemporaryDirectory()
        let a = try node(dirA, log), b = try node(dirB, log)
        _ = await b.sharedLogFirstContact()
        log.quiet.store(true, ordering: .relaxed)
        for i in 1...5 { _ = try await a.dispatch(set("/i", .int(Int64(i)))) }
        #expect(b.snapshot.seq == 0)
        log.poll()
        try await waitUntil("b.snapshot.seq == 5") { b.snapshot.seq == 5 }
        #expect(b.snapshot.state == ["i": 5])
        await a.close()
        await b.close()
    }
}
