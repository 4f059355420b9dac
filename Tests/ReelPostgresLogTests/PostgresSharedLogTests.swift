import Foundation
import Logging
import ReelCore
@testable import ReelPostgresLog
import ReelStore
import ReelTestSupport
import Testing

/// `PostgresSharedLog` against a real PostgreSQL server (``PostgresServer``): one server for the
/// suite, a database per test; the tests that stop or freeze a server start one of their own.
///
/// The log's calls block their thread, as they do the store's writer thread: the tests make them
/// on threads of their own (``onThread(_:)``), never on Swift's cooperative pool.
///
/// Two minutes per test (the shortest limit of a suite and its test applies): the tests with a
/// server of their own (initdb, then stops and starts) took up to 22 s of one minute on a busy
/// machine, beside the rest of the suite.
@Suite(.timeLimit(.minutes(2)), .heavy(long: true, prepare: { _ = try await PostgresServer.shared() }))
struct PostgresSharedLogTests {
    static let reducer = ReducerIdentity(name: "todos", version: "1")

    static func logger() -> Logger {
        var logger = Logger(label: "reel-postgres-log-test")
        logger.logLevel = .error
        return logger
    }

    /// The call timeout of the logs whose timeout is not under test: generous, since how fast
    /// PostgreSQL answers on a busy machine is not what these tests check (an append of 16,005
    /// entries once took more than 5 s, with every other test running).
    static let callTimeout: Duration = .seconds(60)

    /// A log on the `url` of a database, with a generous call timeout (``callTimeout``).
    static func log(_ url: String) throws -> PostgresSharedLog {
        try PostgresSharedLog(url: url, logger: logger(), callTimeout: callTimeout)
    }

    /// A log on a fresh database of the shared server, with the tables made.
    static func freshLog(_ name: String, callTimeout: Duration = callTimeout) async throws -> (PostgresSharedLog, url: String) {
        let url = try await PostgresServer.shared().createDatabase(name)
        let log = try PostgresSharedLog(url: url, logger: logger(), callTimeout: callTimeout)
        _ = try await onThread { try log.prepare(reducer: reducer) }
        return (log, url)
    }

    static func entry(_ seq: UInt64, _ text: String, key: String? = nil) -> SharedLogEntry {
        SharedLogEntry(seq: seq, record: Array(text.utf8), type: "note", claimedKey: key)
    }

    // MARK: - Tables

    @Test func prepareCreatesTheTablesOnceAndKeepsTheFirstReducer() async throws {
        let url = try await PostgresServer.shared().createDatabase("prepare")
        // Three nodes starting at once, with different reducers: one creates, all agree.
        let logs = try (0..<3).map { _ in try Self.log(url) }
        defer { logs.forEach { $0.close() } }
        let identities = try await withThrowingTaskGroup(of: ReducerIdentity.self) { group in
            for (index, log) in logs.enumerated() {
                group.addTask { try await onThread { try log.prepare(reducer: ReducerIdentity(name: "app\(index)", version: "\(index)")) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(identities).count == 1, "every node reads the same reducer back: \(identities)")
        let first = try #require(identities.first)
        #expect(first.name.hasPrefix("app"))
        // Later prepares, by the same instance or a new one, change nothing.
        #expect(try await onThread { try logs[0].prepare(reducer: Self.reducer) } == first)
        let later = try Self.log(url)
        defer { later.close() }
        #expect(try await onThread { try later.prepare(reducer: ReducerIdentity(name: "other", version: "9")) } == first)
        let stored = try await PostgresServer.shared().execute("SELECT key, value FROM reel_store ORDER BY key", in: url)
        #expect(stored == "reducer_name|\(first.name)\nreducer_version|\(first.version)")
    }

    @Test func prepareRefusesTablesOfAnotherShape() async throws {
        let server = try await PostgresServer.shared()
        for (name, sql, complaint) in [
            ("typed", "CREATE TABLE reel_log (seq bigint PRIMARY KEY, record text NOT NULL, type text NOT NULL, idempotency_key text UNIQUE, appended_at timestamptz NOT NULL)", "record is text"),
            ("unkeyed", "CREATE TABLE reel_log (seq bigint NOT NULL, record bytea NOT NULL, type text NOT NULL, idempotency_key text, appended_at timestamptz NOT NULL)", "has no unique index"),
            ("missing", "CREATE TABLE reel_log (seq bigint PRIMARY KEY)", "no column record"),
        ] {
            let url = try await server.createDatabase(name)
            try await server.execute(sql, in: url)
            let log = try Self.log(url)
            defer { log.close() }
            let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.prepare(reducer: Self.reducer) } }
            #expect(error.kind == .incompatible)
            #expect(error.message.contains(complaint), "\(error.message)")
        }
    }

    /// A node whose user may only read and append (the tables made by another), as an
    /// administrator may set it up: prepare creates nothing, so it needs no more.
    @Test func aUserThatMayOnlyReadAndAppendPreparesAndAppends() async throws {
        let server = try await PostgresServer.shared()
        let (owner, url) = try await Self.freshLog("grants")
        owner.close()
        let database = try #require(URL(string: url)?.lastPathComponent)
        let role = "appender_\(database)", stranger = "stranger_\(database)"
        try await server.execute("""
            CREATE ROLE \(role) LOGIN; CREATE ROLE \(stranger) LOGIN;
            REVOKE CREATE ON SCHEMA public FROM PUBLIC;
            GRANT SELECT, INSERT ON reel_log TO \(role); GRANT SELECT ON reel_store TO \(role);
            """, in: url)
        let limited = try Self.log("postgres://\(role)@127.0.0.1:\(server.port)/\(database)")
        defer { limited.close() }
        #expect(try await onThread { try limited.prepare(reducer: ReducerIdentity(name: "other", version: "2")) } == Self.reducer)
        #expect(try await onThread { try limited.append([Self.entry(1, "by the appender")]) } == .appended)
        let none = try Self.log("postgres://\(stranger)@127.0.0.1:\(server.port)/\(database)")
        defer { none.close() }
        let error = try await #require(throws: SharedLogError.self) { try await onThread { try none.latestSeq() } }
        #expect(error.kind == .incompatible)
        #expect(error.message.contains("permission denied") && error.message.contains("42501"), "\(error.message)")
    }

    // MARK: - Appending and reading

    @Test func appendedEntriesReadBackByteForByte() async throws {
        let (log, url) = try await Self.freshLog("roundtrip")
        defer { log.close() }
        #expect(try await onThread { try log.latestSeq() } == 0)
        #expect(try await onThread { try log.entries(after: 0, limit: 10) } == [])
        let entries = [
            SharedLogEntry(seq: 1, record: Array(0...255), type: "all-bytes", claimedKey: "key-1"),
            SharedLogEntry(seq: 2, record: [], type: "empty"),
            SharedLogEntry(seq: 3, record: [0, 0, 0xff, 0x5c, 0x27], type: "é ✓", claimedKey: "ключ"),
        ]
        #expect(try await onThread { try log.append(entries) } == .appended)
        #expect(try await onThread { try log.append([Self.entry(4, "four")]) } == .appended)
        #expect(try await onThread { try log.latestSeq() } == 4)
        #expect(try await onThread { try log.entries(after: 0, limit: 10) } == entries + [Self.entry(4, "four")])
        #expect(try await onThread { try log.entries(after: 1, limit: 2) } == Array(entries[1...2]))
        #expect(try await onThread { try log.entries(after: 4, limit: 10) } == [])
        #expect(try await onThread { try log.entries(after: 2, limit: 0) } == [])
        let keys = try await PostgresServer.shared().execute("SELECT seq, coalesce(idempotency_key, '-') FROM reel_log ORDER BY seq", in: url)
        #expect(keys == "1|key-1\n2|-\n3|ключ\n4|-")
    }

    @Test func aLargeAppendSpansSeveralStatements() async throws {
        let (log, _) = try await Self.freshLog("large")
        defer { log.close() }
        let count = PostgresSharedLog.rowsPerStatement * 2 + 5
        let entries = (1...UInt64(count)).map { Self.entry($0, "entry \($0)") }
        #expect(try await onThread { try log.append(entries) } == .appended)
        #expect(try await onThread { try log.latestSeq() } == UInt64(count))
        #expect(try await onThread { try log.entries(after: UInt64(count) - 3, limit: 10) } == Array(entries.suffix(3)))
    }

    @Test func aConflictingAppendWritesNothing() async throws {
        let (first, url) = try await Self.freshLog("conflict")
        let second = try Self.log(url)
        defer { first.close(); second.close() }
        #expect(try await onThread { try first.append([Self.entry(1, "first's")]) } == .appended)
        // The same seq from another node, with a second entry that would have been new.
        #expect(try await onThread { try second.append([Self.entry(1, "second's"), Self.entry(2, "second's too")]) } == .conflict)
        #expect(try await onThread { try first.append([Self.entry(2, "claims k", key: "k")]) } == .appended)
        // A free seq, but a claimed key on the batch's second entry: the first is not written either.
        #expect(try await onThread { try second.append([Self.entry(3, "fine"), Self.entry(4, "claims k again", key: "k")]) } == .conflict)
        #expect(try await onThread { try second.latestSeq() } == 2)
        #expect(try await onThread { try second.entries(after: 0, limit: 10) } == [Self.entry(1, "first's"), Self.entry(2, "claims k", key: "k")])
        // The conflicts left the connections usable.
        #expect(try await onThread { try second.append([Self.entry(3, "second's turn")]) } == .appended)
    }

    /// During a node's exclusive turn, another node's append waits; it goes on when the turn
    /// ends, and finds the seq the turn took.
    @Test func anExclusiveTurnHoldsOtherNodesAppendsUntilItEnds() async throws {
        let (holder, url) = try await Self.freshLog("turn")
        let other = try Self.log(url)
        defer { holder.close(); other.close() }
        #expect(try await onThread { try holder.append([Self.entry(1, "before")]) } == .appended)
        try await onThread { try holder.beginExclusiveTurn() }
        let waiting = Task(executorPreference: TestThreads.shared) { try await onThread { try other.append([Self.entry(2, "other's")]) } }
        // The other's append waits for the turn's lock, as PostgreSQL itself shows.
        let server = try await PostgresServer.shared()
        let lockWaits = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
        try await waitUntil("the other node's append to wait for the turn's lock (pg_stat_activity)") {
            try await server.execute(lockWaits, in: url) == "1"
        }
        // Reads are not held up, and the holder's own append goes through in its turn.
        #expect(try await onThread { try other.latestSeq() } == 1)
        #expect(try await onThread { try holder.append([Self.entry(2, "holder's")]) } == .appended)
        // The other's append still waits: nothing of it is written.
        #expect(try await server.execute(lockWaits, in: url) == "1", "the other node's append stopped waiting during the turn")
        #expect(try await onThread { try holder.entries(after: 1, limit: 5) } == [Self.entry(2, "holder's")])
        try await onThread { holder.endExclusiveTurn() }
        #expect(try await waiting.value == .conflict)
        // After the turn, both append as before (the holder's connection went back to the pool).
        #expect(try await onThread { try other.append([Self.entry(3, "other's")]) } == .appended)
        #expect(try await onThread { try holder.append([Self.entry(4, "holder's again")]) } == .appended)
    }

    /// A turn whose holder dies (its connection closed) ends with it.
    @Test func aTurnEndsWithItsHoldersConnection() async throws {
        let (holder, url) = try await Self.freshLog("turn_lost")
        let other = try Self.log(url)
        defer { other.close() }
        try await onThread { try holder.beginExclusiveTurn() }
        holder.close()
        #expect(try await onThread { try other.append([Self.entry(1, "after the holder went")]) } == .appended)
    }

    @Test func anAppendThatWouldLeaveAGapIsRefused() async throws {
        let (log, _) = try await Self.freshLog("gap")
        defer { log.close() }
        let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.append([Self.entry(2, "too far")]) } }
        #expect(error.kind == .incompatible)
        #expect(error.message.contains("gap"), "\(error.message)")
        #expect(try await onThread { try log.latestSeq() } == 0)
        let notConsecutive = try await #require(throws: SharedLogError.self) {
            try await onThread { try log.append([Self.entry(1, "a"), Self.entry(3, "c")]) }
        }
        #expect(notConsecutive.kind == .incompatible)
        #expect(try await onThread { try log.append([Self.entry(1, "a")]) } == .appended)
    }

    /// Three nodes appending as fast as they can, each retrying after a conflict at the seq it
    /// then reads: every entry lands exactly once, and the seqs have no gap.
    @Test func racingAppendersEndWithAGaplessLogHoldingEachEntryOnce() async throws {
        let (creator, url) = try await Self.freshLog("race")
        creator.close()
        let writers = 3, batches = 25
        let logs = try (0..<writers).map { _ in try Self.log(url) }
        defer { logs.forEach { $0.close() } }
        let conflicts = try await withThrowingTaskGroup(of: Int.self) { group in
            for (writer, log) in logs.enumerated() {
                group.addTask {
                    try await onThread {
                        var conflicts = 0
                        for batch in 0..<batches {
                            let size = batch % 3 + 1
                            while true {
                                let next = try log.latestSeq() + 1
                                let entries = (0..<size).map { Self.entry(next + UInt64($0), "w\(writer) b\(batch) #\($0)", key: $0 == 0 ? "w\(writer)-b\(batch)" : nil) }
                                if try log.append(entries) == .appended { break }
                                conflicts += 1
                            }
                        }
                        return conflicts
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let all = try await onThread { try logs[0].entries(after: 0, limit: 10_000) }
        let expected = writers * (0..<batches).map { $0 % 3 + 1 }.reduce(0, +)
        #expect(all.map(\.seq) == Array(1...UInt64(expected)))
        let texts = all.map { String(decoding: $0.record, as: UTF8.self) }
        #expect(Set(texts).count == expected, "each entry exactly once")
        // A batch's entries stay together, in order.
        for (index, entry) in all.enumerated() where entry.claimedKey != nil {
            let head = texts[index].dropLast(3)
            let size = Int(head.split(separator: "b").last!)! % 3 + 1
            #expect(texts[index..<index + size] == ArraySlice((0..<size).map { "\(head) #\($0)" }))
        }
        print("racing appenders: \(expected) entries, \(conflicts) conflicts retried")
    }

    // MARK: - Watching

    @Test func watchWakesWithTheSeqAnotherNodeAppended() async throws {
        let (watching, url) = try await Self.freshLog("watch")
        let other = try Self.log(url)
        defer { watching.close(); other.close() }
        let wakes = WakeRecorder()
        watching.watch { wakes.record($0) }
        // The wake-up without a seq when listening starts: from then on, appends are heard.
        try await waitUntil("the watcher to listen", timeout: .seconds(30)) { wakes.all.contains(nil) }
        #expect(try await onThread { try other.append([Self.entry(1, "one"), Self.entry(2, "two")]) } == .appended)
        try await waitUntil("a wake-up with seq 2", timeout: .seconds(30)) { wakes.all.contains(2) }
        #expect(!wakes.all.contains(1), "one notification per append, with its last seq")
    }

    @Test func watchPollsWhenNothingHappens() async throws {
        let url = try await PostgresServer.shared().createDatabase("poll")
        let log = try PostgresSharedLog(url: url, logger: Self.logger(), pollInterval: .milliseconds(50), callTimeout: Self.callTimeout)
        let wakes = WakeRecorder()
        log.watch { wakes.record($0) }
        try await waitUntil("several polls", timeout: .seconds(30)) { wakes.all.count >= 5 }
        let started = ContinuousClock.now
        log.close()
        // Promptly: not after the watcher's 60 s probe timeout (the margin is for a busy machine).
        #expect(started.duration(to: .now) < .seconds(30), "close stops the watcher promptly")
        let count = wakes.all.count
        // The sleep is the thing under test: ten poll intervals without a wake-up.
        try await Task.sleep(for: .milliseconds(500))
        #expect(wakes.all.count == count, "no wake-up after close")
        let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.latestSeq() } }
        #expect(error.kind == .unavailable)
        #expect(error.message.contains("closed"))
    }

    // MARK: - Outages

    /// A server stopped under a node and started again: calls fail fast as unavailable, then work
    /// again on the same instance, and the watcher listens again.
    @Test(.timeLimit(.minutes(2))) func anOutageIsUnavailableThenServedAgain() async throws {
        let server = try await PostgresServer.launch()
        defer { server.shutdown() }
        let url = try await server.createDatabase("outage")
        let log = try PostgresSharedLog(url: url, logger: Self.logger(), pollInterval: .seconds(60), callTimeout: Self.callTimeout)
        let other = try Self.log(url)
        defer { log.close(); other.close() }
        _ = try await onThread { try log.prepare(reducer: Self.reducer) }
        #expect(try await onThread { try log.append([Self.entry(1, "before")]) } == .appended)
        let wakes = WakeRecorder()
        log.watch { wakes.record($0) }
        try await waitUntil("the watcher to listen", timeout: .seconds(30)) { wakes.all.contains(nil) }

        var seq: UInt64 = 1
        for mode in [PostgresServer.StopMode.fast, .immediate] {
            try await server.stop(mode: mode)
            let next = seq + 1
            for attempt in 0..<3 {
                let started = ContinuousClock.now
                let error = try await #require(throws: SharedLogError.self) {
                    try await onThread { try log.append([Self.entry(next, "during")]) }
                }
                #expect(error.kind == .unavailable)
                // The first call may still find the connection the server closed (on a busy
                // machine, before its end is noticed: "the server closed the connection", or the
                // server's 57P01); it is dropped, and the next calls connect.
                if attempt > 0 {
                    #expect(error.message.hasSuffix("is unreachable: connection refused"), "\(mode) stop, attempt \(attempt): \(error.message)")
                }
                // Refused, not given up on after the 60 s call timeout (the margin is for a busy
                // machine).
                #expect(started.duration(to: .now) < .seconds(30), "refused at once, not after the 60 s timeout")
            }
            let listening = wakes.all.count
            try await server.start()
            // The same instance, without anything done to it.
            #expect(try await onThread { try log.latestSeq() } == next - 1)
            #expect(try await onThread { try log.append([Self.entry(next, "after \(mode)")]) } == .appended)
            try await waitUntil("the watcher to listen again", timeout: .seconds(30)) { wakes.all.count > listening }
            #expect(try await onThread { try other.append([Self.entry(next + 1, "other's")]) } == .appended)
            try await waitUntil("a wake-up with seq \(next + 1) after the \(mode) restart", timeout: .seconds(30)) {
                wakes.all.contains(next + 1)
            }
            seq = next + 1
        }
    }

    /// Two nodes appending without pause while the server is stopped (cleanly, then as a crash)
    /// and started again: no call hangs, every acknowledged entry is in the log afterwards, byte
    /// for byte, and the log has no gap. Paced by what the writers see, not by the clock: each
    /// stop comes once both writers have appended since the last, each start once both have found
    /// the server unavailable (a writer then waits for the start instead of retrying at once), and
    /// the load ends once both have appended after the last start.
    @Test(.timeLimit(.minutes(2))) func restartsUnderLoadLoseNoAcknowledgedEntry() async throws {
        let server = try await PostgresServer.launch()
        defer { server.shutdown() }
        let url = try await server.createDatabase("load")
        // The tables made with a generous timeout (the writers' 2 s may not be enough here).
        let maker = try Self.log(url)
        _ = try await onThread { try maker.prepare(reducer: Self.reducer) }
        maker.close()
        let logs = try (0..<2).map { _ in try PostgresSharedLog(url: url, logger: Self.logger(), callTimeout: .seconds(2)) }
        defer { logs.forEach { $0.close() } }
        let phases = LoadPhases(writers: logs.count)
        let writers = logs.enumerated().map { writer, log in
            Task(executorPreference: TestThreads.shared) {
                try await onThread { () -> ([SharedLogEntry], Int, Duration) in
                    var acknowledged: [SharedLogEntry] = [], unavailable = 0, slowest: Duration = .zero
                    var number = 0
                    /// A call, timed.
                    func timed<T>(_ call: () throws(SharedLogError) -> T) throws(SharedLogError) -> T {
                        let started = ContinuousClock.now
                        defer { slowest = max(slowest, started.duration(to: .now)) }
                        return try call()
                    }
                    while !phases.isStopping {
                        do throws(SharedLogError) {
                            let entry = Self.entry(try timed { () throws(SharedLogError) in try log.latestSeq() } + 1, "w\(writer) #\(number)")
                            if try timed({ () throws(SharedLogError) in try log.append([entry]) }) == .appended {
                                acknowledged.append(entry)
                                number += 1
                                phases.appended(by: writer)
                            }
                        } catch {
                            #expect(error.kind == .unavailable, "\(error.message)")
                            unavailable += 1
                            phases.foundUnavailable(by: writer)
                        }
                    }
                    return (acknowledged, unavailable, slowest)
                }
            }
        }
        for mode in [PostgresServer.StopMode.fast, .immediate] {
            try await phases.waitForAppends(before: "the \(mode) stop")
            phases.beginOutage()
            try await server.stop(mode: mode)
            try await waitUntil("both writers to find the server unavailable after the \(mode) stop", timeout: .seconds(30)) {
                phases.everyWriterFoundTheOutage
            }
            try await server.start()
            phases.endOutage()
        }
        try await phases.waitForAppends(before: "the end, after the restarts")
        phases.stop()
        var acknowledged: [SharedLogEntry] = []
        for writer in writers {
            let (entries, unavailable, slowest) = try await writer.value
            #expect(!entries.isEmpty && unavailable > 0, "\(entries.count) acknowledged, \(unavailable) unavailable")
            // Its deadline and not much later: the margin is for a busy machine (a call that
            // ignored its deadline would keep its writer from finding the outage, above).
            #expect(slowest < .seconds(10), "no call blocks much beyond its 2 s timeout (slowest \(slowest))")
            acknowledged += entries
        }
        let log = try await onThread { try logs[0].entries(after: 0, limit: 100_000) }
        #expect(log.map(\.seq) == Array(1...UInt64(log.count)))
        let stored = Dictionary(uniqueKeysWithValues: log.map { ($0.seq, $0) })
        for entry in acknowledged { #expect(stored[entry.seq] == entry, "acknowledged entry \(entry.seq) kept") }
        // Each writer's numbers are unique, so an entry appended twice would show here.
        #expect(Set(log.map(\.record)).count == log.count)
    }

    /// A server that hangs (stopped with SIGSTOP): calls give up at their timeout, and work again
    /// once it goes on.
    @Test(.timeLimit(.minutes(2))) func aHungServerTimesOutThenServesAgain() async throws {
        let server = try await PostgresServer.launch()
        defer { server.shutdown() }
        let url = try await server.createDatabase("hung")
        // The tables made with a generous timeout: on a machine busy with every other test, 0.7 s
        // may not be enough for creating them.
        let maker = try Self.log(url)
        _ = try await onThread { try maker.prepare(reducer: Self.reducer) }
        maker.close()
        let log = try PostgresSharedLog(url: url, logger: Self.logger(), callTimeout: .milliseconds(700))
        defer { log.close() }
        // An open connection to hang on (a first call may itself take longer than 0.7 s here).
        try await waitUntil("a first answer within 0.7 s", timeout: .seconds(20)) {
            (try? await onThread { try log.latestSeq() }) == 0
        }
        try server.freeze()
        for call in ["on the open connection", "on a new connection"] {
            let started = ContinuousClock.now
            let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.latestSeq() } }
            let elapsed = started.duration(to: .now)
            #expect(error.kind == .unavailable)
            // The call's deadline, or the connect timeout (the same duration) on a new connection.
            #expect(
                error.message.contains("did not answer within 0.7 s") || error.message.contains("no connection within 0.7 s"),
                "\(call): \(error.message)"
            )
            // At its deadline and not long after: the upper bound's margin is for a busy machine
            // (a call that ignored its deadline would wait for the thaw, after these calls).
            #expect(elapsed >= .milliseconds(600) && elapsed < .seconds(10), "\(call): gave up after \(elapsed)")
        }
        try server.thaw()
        try await waitUntil("the log to answer again", timeout: .seconds(30)) {
            (try? await onThread { try log.latestSeq() }) == 0
        }
        #expect(try await onThread { try log.append([Self.entry(1, "after")]) } == .appended)
    }

    @Test func aServerThatIsNotThereIsUnavailableAtOnce() async throws {
        let port = try PostgresServer.freePort()
        let log = try PostgresSharedLog(url: "postgres://reel@127.0.0.1:\(port)/nowhere", logger: Self.logger(), callTimeout: Self.callTimeout)
        defer { log.close() }
        let started = ContinuousClock.now
        let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.latestSeq() } }
        // Refused by the kernel (the message says so), not given up on after the 60 s call
        // timeout (the margin is for a busy machine).
        #expect(started.duration(to: .now) < .seconds(30), "refused at once, not after the 60 s timeout")
        #expect(error.kind == .unavailable)
        #expect(error.message == "the shared log at postgres://reel@127.0.0.1:\(port)/nowhere is unreachable: connection refused")
    }

    @Test func aMissingDatabaseIsIncompatible() async throws {
        let server = try await PostgresServer.shared()
        let log = try Self.log(server.url(database: "no_such_database"))
        defer { log.close() }
        let error = try await #require(throws: SharedLogError.self) { try await onThread { try log.prepare(reducer: Self.reducer) } }
        #expect(error.kind == .incompatible)
        #expect(error.message.contains("no_such_database") && error.message.contains("3D000"), "\(error.message)")
    }

    @Test func aUnixSocketDirectoryWorksAsHost() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.createDatabase("socket")
        let database = try #require(URL(string: url)?.lastPathComponent)
        let log = try Self.log("postgres://reel@/\(database)?host=\(server.socketDirectory)&port=\(server.port)")
        defer { log.close() }
        #expect(try await onThread { try log.prepare(reducer: Self.reducer) } == Self.reducer)
        #expect(try await onThread { try log.latestSeq() } == 0)
    }
}

/// What the writers of ``PostgresSharedLogTests/restartsUnderLoadLoseNoAcknowledgedEntry()``
/// and the test share: how many entries each appended, whether each found the server unavailable
/// during the current outage, and whether to stop.
final class LoadPhases: @unchecked Sendable {
    // @unchecked: every member is behind `condition`'s lock.
    private let condition = NSCondition()
    private var appends: [Int]
    private var foundOutage: [Bool]
    private var outage = false
    private var stopping = false

    init(writers: Int) {
        appends = Array(repeating: 0, count: writers)
        foundOutage = Array(repeating: false, count: writers)
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    var isStopping: Bool { locked { stopping } }
    var everyWriterFoundTheOutage: Bool { locked { !foundOutage.contains(false) } }

    func appended(by writer: Int) { locked { appends[writer] += 1 } }

    /// A writer's call failed as unavailable. During an outage, the writer has found it: it waits
    /// (on its own thread) until the server is back. Otherwise (a call that timed out on a busy
    /// machine, or found a connection closed by the last restart) it goes on at once.
    func foundUnavailable(by writer: Int) {
        locked {
            guard outage else { return }
            foundOutage[writer] = true
            while outage && !stopping { condition.wait() }
        }
    }

    /// Waits until every writer appended a few entries more than when called.
    func waitForAppends(before what: String) async throws {
        let start = locked { appends }
        try await waitUntil("both writers to append before \(what)", timeout: .seconds(30)) {
            locked { zip(appends, start).allSatisfy { $0 >= $1 + 5 } }
        }
    }

    func beginOutage() {
        locked {
            outage = true
            foundOutage = foundOutage.map { _ in false }
        }
    }

    func endOutage() {
        locked {
            outage = false
            condition.broadcast()
        }
    }

    func stop() {
        locked {
            stopping = true
            condition.broadcast()
        }
    }
}

/// Every wake-up a watcher delivered.
final class WakeRecorder: @unchecked Sendable {
    // @unchecked: `seqs` is behind the lock.
    private let lock = NSLock()
    private var seqs: [UInt64?] = []

    func record(_ seq: UInt64?) { lock.withLock { seqs.append(seq) } }
    var all: [UInt64?] { lock.withLock { seqs } }
}

/// Runs a blocking call on a thread of its own, as the store's writer makes them.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
