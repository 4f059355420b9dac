import Foundation
import Logging
import PostgresNIO
import ReelCore
import ReelStore

/// A ``SharedLog`` kept in a PostgreSQL table (`reeld --shared-log postgres://…`): the table's
/// primary key on `seq` decides which node's append gets a seq, its unique `idempotency_key`
/// which node's dispatch claims a key, and `NOTIFY reel_log` tells the other nodes.
///
/// Every call blocks the calling thread (the store's writer, a plain thread) until PostgreSQL has
/// answered, at most `callTimeout`; meanwhile the work runs on an executor of its own (see
/// ``SharedLogExecutor``). Connection refused, lost or timed out is
/// ``SharedLogError/Kind/unavailable`` with the reason in one line; the next call connects again,
/// so the log serves again as soon as the server is back, on the same instance.
///
/// The tables are described in ``SharedLogSchema``; ``prepare(reducer:)`` creates them.
public final class PostgresSharedLog: SharedLog, @unchecked Sendable {
    // @unchecked: `closed` and `watcher` are behind `lock`; everything else is immutable.
    public let location: String
    private let logger: Logger
    private let pollInterval: Duration
    private let callTimeout: Duration
    private let executor: SharedLogExecutor
    private let connections: ConnectionSource
    private let bridge: BlockingBridge
    private let lock = NSLock()
    private var closed = false
    private var watcher: NotificationWatcher?

    /// Rows per INSERT statement: a statement takes at most 65,535 parameters, 4 per row.
    static let rowsPerStatement = 8_000

    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database`, as ``PostgresURL`` reads it.
    ///   - pollInterval: How often ``watch(_:)`` wakes the store with no news, in case a
    ///     notification was lost.
    ///   - callTimeout: How long a call may block before it gives up as unavailable; also the
    ///     connect timeout and the server-side statement and idle-in-transaction timeouts.
    /// - Throws: ``SharedLogError/Kind/incompatible`` for a URL that cannot be used. Nothing is
    ///   connected yet: the first call connects.
    public init(
        url: String, logger: Logger, pollInterval: Duration = .seconds(1), callTimeout: Duration = .seconds(10)
    ) throws(SharedLogError) {
        let parsed = try PostgresURL(url)
        location = parsed.redacted
        var logger = logger
        logger[metadataKey: "shared-log"] = "\(parsed.redacted)"
        self.logger = logger
        self.pollInterval = pollInterval
        self.callTimeout = callTimeout
        executor = SharedLogExecutor(label: "reel.shared-log")
        connections = ConnectionSource(configuration: try parsed.connectionConfiguration(callTimeout: callTimeout), logger: logger)
        bridge = BlockingBridge(executor: executor, timeout: callTimeout)
    }

    deinit { close() }

    public func prepare(reducer: ReducerIdentity) throws(SharedLogError) -> ReducerIdentity {
        try call("prepare the log") { session in
            try await SharedLogSchema.prepare(session, reducer: reducer)
        }
    }

    /// Appends in one statement, so in one implicit transaction and one round trip (a
    /// transaction of several statements when a batch is too large for one):
    ///
    /// ```sql
    /// WITH turn AS (SELECT pg_advisory_xact_lock_shared(<turn lock>) AS taken),
    /// inserted AS (
    ///     INSERT INTO reel_log (seq, record, type, idempotency_key)
    ///     SELECT entry.* FROM (VALUES (…), (…)) AS entry (seq, record, type, idempotency_key), turn
    ///     WHERE <first> = 1 OR EXISTS (SELECT 1 FROM reel_log WHERE seq = <first> - 1)
    ///     RETURNING seq
    /// ), notified AS (SELECT pg_notify('reel_log', '<last>') FROM inserted LIMIT 1)
    /// SELECT count(*) FROM inserted WHERE EXISTS (SELECT 1 FROM notified)
    /// ```
    ///
    /// Why this is enough at READ COMMITTED (PostgreSQL's default, kept here):
    /// - Two nodes appending at the same seq: the second INSERT waits on the primary key's index
    ///   entry until the first transaction ends, then fails with a unique violation (23505) if it
    ///   committed (or goes ahead if it rolled back): a conflict, and the statement as a whole
    ///   is undone. The same holds for an idempotency key. Uniqueness is checked against every
    ///   committed row, not a snapshot, so no stronger isolation is needed.
    /// - A gap: the condition on the predecessor is evaluated on the statement's snapshot, which
    ///   holds every commit made before the statement began. A caller appends seq n only once it
    ///   has seen n - 1 committed (it read it, or its own append of it was acknowledged), so a
    ///   missing predecessor means this node is ahead of the log, or the log lost entries: no row
    ///   is inserted (count 0), and the answer is ``SharedLogError/Kind/incompatible``. As an
    ///   entry commits only after its predecessor did, commit order is seq order, and every
    ///   reader's snapshot holds a gapless prefix of the log.
    /// - The notification goes out at commit only, and only when rows were inserted.
    ///
    /// A connection lost during the call may have lost the answer to a statement that committed:
    /// the call is then ``SharedLogError/Kind/unavailable`` (never retried, as a retry would see
    /// its own entries as a conflict).
    public func append(_ entries: [SharedLogEntry]) throws(SharedLogError) -> SharedLogAppendOutcome {
        guard let first = entries.first, let last = entries.last else { return .appended }
        for (offset, entry) in entries.enumerated() where entry.seq != first.seq + UInt64(offset) {
            throw SharedLogError(.incompatible, "cannot append to \(location): seqs must follow each other (\(first.seq)+\(offset) ≠ \(entry.seq))")
        }
        guard first.seq >= 1, last.seq <= UInt64(Int64.max) else {
            throw SharedLogError(.incompatible, "cannot append to \(location): seq \(first.seq < 1 ? first.seq : last.seq) is out of range")
        }
        let action = entries.count == 1 ? "append entry \(first.seq)" : "append entries \(first.seq)…\(last.seq)"
        let location = location
        return try call(action, retryIfStale: false) { session in
            let chunks = stride(from: 0, to: entries.count, by: Self.rowsPerStatement).map {
                entries[$0..<min($0 + Self.rowsPerStatement, entries.count)]
            }
            do {
                if chunks.count == 1 {
                    try await Self.insert(chunks[0], session: session)
                } else {
                    // Each chunk checks for the last entry of the one before, visible to this
                    // transaction though not committed yet.
                    try await session.transaction {
                        for chunk in chunks { try await Self.insert(chunk, session: session) }
                    }
                }
                return .appended
            } catch let error where PostgresFailure(error).isUniqueViolation {
                if case .server(_, _, let constraint) = PostgresFailure(error) {
                    session.logger.debug("shared log: \(action) at \(location) conflicts on \(constraint ?? "a unique index")")
                }
                return .conflict
            }
        }
    }

    /// Runs the statement of ``append(_:)`` for `chunk`, and throws if it inserted nothing.
    private static func insert(_ chunk: ArraySlice<SharedLogEntry>, session: Session) async throws {
        let rows = try await session.query(appendStatement(chunk))
        guard let row = rows.first, try row.decode(Int64.self) == Int64(chunk.count) else {
            let first = chunk.first!.seq
            throw PostgresFailure.refused(reason: """
                appending entry \(first) would leave a gap: the log has no entry \(first - 1) \
                (this node is ahead of the log, or the log lost entries)
                """)
        }
    }

    public func entries(after seq: UInt64, limit: Int) throws(SharedLogError) -> [SharedLogEntry] {
        guard limit > 0, seq < UInt64(Int64.max) else { return [] }
        return try call("read entries after \(seq)") { session in
            let rows = try await session.query("""
                SELECT seq, record, type, idempotency_key FROM reel_log WHERE seq > \(Int64(seq)) ORDER BY seq LIMIT \(Int64(limit))
                """)
            var entries: [SharedLogEntry] = []
            entries.reserveCapacity(rows.count)
            for row in rows {
                let (entrySeq, record, type, key) = try row.decode((Int64, ByteBuffer, String, String?).self)
                // Readers see a gapless prefix (see `append`): a gap is a damaged log.
                let expected = seq + UInt64(entries.count) + 1
                guard entrySeq == Int64(expected) else {
                    throw PostgresFailure.refused(reason: "the log has no entry \(expected) but has \(entrySeq) (entries were lost)")
                }
                entries.append(SharedLogEntry(seq: expected, record: Array(record.readableBytesView), type: type, claimedKey: key))
            }
            return entries
        }
    }

    public func latestSeq() throws(SharedLogError) -> UInt64 {
        try call("read the latest seq") { session in
            let rows = try await session.query("SELECT coalesce(max(seq), 0)::bigint FROM reel_log")
            guard let row = rows.first else { throw PostgresFailure.refused(reason: "max(seq) returned no row") }
            return UInt64(try row.decode(Int64.self))
        }
    }

    /// A session-level advisory lock, exclusive, on a connection that every call of the turn
    /// uses: every append statement takes the same lock shared for its transaction (see
    /// ``appendStatement(_:)``), so appends of other nodes wait until the turn ends; this node's
    /// own append, on the same session, does not wait for itself. Other nodes' reads are not held
    /// up. The lock goes with its connection: a turn whose connection is lost has ended.
    public func beginExclusiveTurn() throws(SharedLogError) {
        let connections = connections
        try call("take an exclusive turn", retryIfStale: true) { session in
            try await session.query("SELECT pg_advisory_lock(\(Self.turnLock))")
            connections.pin(session.connection)
        }
    }

    public func endExclusiveTurn() {
        let connections = connections
        _ = try? call("end the exclusive turn", retryIfStale: false) { session in
            defer { connections.unpin() }
            try await session.query("SELECT pg_advisory_unlock(\(Self.turnLock))")
        }
        connections.unpin()
    }

    /// The advisory lock of a turn ("reel_turn"), apart from the schema's.
    static let turnLock: Int64 = 0x7265_656C_5F74_726E

    /// Wake-ups come from the log's own executor: `wake` should only signal (the writer thread,
    /// say), and must not call this log, which would block the very executor the call needs.
    public func watch(_ wake: @escaping @Sendable (_ latestSeq: UInt64?) -> Void) {
        let watcher: NotificationWatcher? = lock.withLock {
            guard !closed, self.watcher == nil else { return nil }
            let watcher = NotificationWatcher(
                source: connections, executor: executor, pollInterval: pollInterval, probeTimeout: callTimeout,
                logger: logger, location: location, wake: wake
            )
            self.watcher = watcher
            return watcher
        }
        watcher?.start()
    }

    /// Stops watching (no wake-up starts after this returns) and closes the idle connections. A
    /// call still running ends by itself (its connection is closed when it ends), and later
    /// calls throw ``SharedLogError/Kind/unavailable``. Safe to call again.
    public func close() {
        let watcher: NotificationWatcher? = lock.withLock {
            closed = true
            defer { self.watcher = nil }
            return self.watcher
        }
        watcher?.stop()
        connections.shutdown()
    }

    // MARK: - Calls

    /// Runs `body` on a connection for a blocked caller, and turns every failure into a
    /// ``SharedLogError`` naming `action`.
    private func call<T: Sendable>(
        _ action: String, retryIfStale: Bool = true, _ body: @escaping @Sendable (Session) async throws -> T
    ) throws(SharedLogError) -> T {
        guard !lock.withLock({ closed }) else {
            throw SharedLogError(.unavailable, "the shared log at \(location) is closed")
        }
        // A wake-up runs on the executor the call needs: blocking it would wait for the timeout.
        guard !executor.isCurrent else {
            assertionFailure("a SharedLog call from inside a wake-up")
            throw SharedLogError(.unavailable, "the shared log at \(location) cannot be called from its own wake-up")
        }
        let connections = connections, location = location
        let seconds = callTimeout / .seconds(1)
        return try bridge.run(
            describeTimeout: SharedLogError(
                .unavailable, "the shared log at \(location) did not answer within \(seconds.formatted()) s (trying to \(action))"
            )
        ) {
            do throws(PostgresFailure) {
                return .success(try await connections.withSession(retryIfStale: retryIfStale, body))
            } catch {
                return .failure(error.sharedLogError(location: location, action: action))
            }
        }
    }

    /// The statement of ``append(_:)`` for consecutive `entries`, with their values as parameters.
    static func appendStatement(_ entries: ArraySlice<SharedLogEntry>) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: entries.count * 4 + 2)
        var values = ""
        values.reserveCapacity(entries.count * 24)
        for (index, entry) in entries.enumerated() {
            let base = index * 4
            values += index == 0 ? "" : ", "
            values += "($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4))"
            bindings.append(Int64(entry.seq))
            bindings.append(ByteBuffer(bytes: entry.record))
            bindings.append(entry.type)
            bindings.append(entry.claimedKey)
        }
        let first = "$\(entries.count * 4 + 1)", last = "$\(entries.count * 4 + 2)"
        bindings.append(Int64(entries.first!.seq))
        bindings.append(String(entries.last!.seq))
        // `turn` waits while another node holds an exclusive turn (``beginExclusiveTurn()``); the
        // insert reads from it, so it runs first. The predecessor check keeps the statement's
        // snapshot, taken before any wait: a predecessor visible then still exists, and an entry
        // the turn added meanwhile is found by the primary key's check, as a conflict.
        let sql = """
            WITH turn AS (SELECT pg_advisory_xact_lock_shared(\(turnLock)) AS taken),
            inserted AS (
                INSERT INTO reel_log (seq, record, type, idempotency_key)
                SELECT entry.* FROM (VALUES \(values)) AS entry (seq, record, type, idempotency_key), turn
                WHERE \(first) = 1 OR EXISTS (SELECT 1 FROM reel_log WHERE seq = \(first) - 1)
                RETURNING seq
            ), notified AS (SELECT pg_notify('\(NotificationWatcher.channel)', \(last)) FROM inserted LIMIT 1)
            SELECT count(*) FROM inserted WHERE EXISTS (SELECT 1 FROM notified)
            """
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }
}
