import Foundation
import Logging
import PostgresNIO

/// The connections the calls run on: made when a call needs one, kept open between calls (a few),
/// dropped as soon as anything goes wrong with them.
///
/// Not postgres-nio's `PostgresClient`, on purpose. Its pool, when the server cannot be reached,
/// keeps a call waiting (it neither fails it nor says why) while it retries in the background with
/// a backoff that grows to a minute, and only fails calls once it has failed for 60 s (neither is
/// configurable in 1.33). A writer must instead hear at once that the log is unreachable, and why
/// ("connection refused"), and be served again as soon as the server is back. Here, a call that
/// finds no open connection makes one, so an outage costs each call one failed connection attempt
/// (a millisecond when refused; ``BlockingBridge``'s deadline when the server hangs), and the first
/// call after the server comes back succeeds. Calls come from one writer, so a small idle stack is
/// all the pooling needed.
final class ConnectionSource: @unchecked Sendable {
    // @unchecked: the mutable state is behind `lock`.
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let lock = NSLock()
    private var idle: [(connection: PostgresConnection, since: ContinuousClock.Instant)] = []
    private var closed = false
    private var nextID = 1
    /// During an exclusive turn: the connection holding the turn's session lock, which every call
    /// uses until the turn ends (an append on another connection would wait for the turn itself).
    private var pinned: PostgresConnection?

    /// Connections kept open between calls.
    static let maximumIdle = 4
    /// An idle connection older than this is closed instead of reused: a NAT or firewall may have
    /// forgotten it silently, and a call would then wait for its deadline.
    static let idleLimit: Duration = .seconds(30)

    init(configuration: PostgresConnection.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs `body` on a connection. With `retryIfStale`, an idle connection that turns out to be
    /// dead (the server restarted since it was last used) at the body's first statement is
    /// replaced by a fresh one, once: for bodies that only read, or start with `BEGIN`, whose
    /// first statement cannot have changed anything. A cancelled task closes the connection,
    /// which fails whatever the body awaits at once.
    func withSession<T: Sendable>(retryIfStale: Bool, _ body: (Session) async throws -> T) async throws(PostgresFailure) -> T {
        var retried = false
        while true {
            let (connection, reused) = try await take()
            let session = Session(connection: connection, logger: logger)
            do {
                let value = try await withTaskCancellationHandler {
                    try await body(session)
                } onCancel: {
                    Self.close(connection)
                }
                giveBack(connection)
                return value
            } catch {
                let failure = PostgresFailure(error)
                if failure.connectionSurvives && session.isClean && !Task.isCancelled {
                    giveBack(connection)
                } else {
                    Self.close(connection)
                }
                if case .connection = failure, retryIfStale, reused, session.statementsCompleted == 0, !retried, !Task.isCancelled {
                    logger.debug("shared log: an idle connection was dead (\(failure.reason)); trying a fresh one")
                    retried = true
                    continue
                }
                throw failure
            }
        }
    }

    /// Closes the idle connections; later calls fail.
    func shutdown() {
        let connections = lock.withLock {
            closed = true
            defer {
                idle.removeAll()
                pinned = nil
            }
            return idle.map(\.connection) + (pinned.map { [$0] } ?? [])
        }
        connections.forEach(Self.close)
    }

    /// A new connection for one task of its own (the watcher's `LISTEN`), not kept by the source.
    func connect() async throws(PostgresFailure) -> PostgresConnection {
        let id: Int? = lock.withLock {
            guard !closed else { return nil }
            defer { nextID += 1 }
            return nextID
        }
        guard let id else { throw PostgresFailure.connection(reason: "the shared log is closed") }
        do {
            return try await PostgresConnection.connect(
                on: PostgresConnection.defaultEventLoopGroup.any(), configuration: configuration, id: id, logger: logger
            )
        } catch {
            throw PostgresFailure(error)
        }
    }

    /// Keeps `connection` for every call from now on, until ``unpin()``.
    func pin(_ connection: PostgresConnection) {
        lock.withLock { pinned = connection }
    }

    /// Ends ``pin(_:)``: the connection, if still open, goes back among the idle ones.
    @discardableResult
    func unpin() -> PostgresConnection? {
        let connection = lock.withLock {
            defer { pinned = nil }
            return pinned
        }
        if let connection { giveBack(connection) }
        return connection
    }

    private func take() async throws(PostgresFailure) -> (PostgresConnection, reused: Bool) {
        if let pinned = lock.withLock({ pinned }) {
            guard !pinned.isClosed else {
                throw PostgresFailure.connection(reason: "the connection holding this node's turn was lost")
            }
            return (pinned, true)
        }
        var stale: [PostgresConnection] = []
        let found: PostgresConnection? = lock.withLock {
            let now = ContinuousClock.now
            while let last = idle.popLast() {
                if !last.connection.isClosed && last.since.duration(to: now) < Self.idleLimit { return last.connection }
                stale.append(last.connection)
            }
            return nil
        }
        stale.forEach(Self.close)
        if let found { return (found, true) }
        return (try await connect(), false)
    }

    private func giveBack(_ connection: PostgresConnection) {
        let kept = lock.withLock {
            if pinned === connection { return true }  // stays pinned, not idle
            guard !closed, !connection.isClosed, idle.count < Self.maximumIdle else { return false }
            idle.append((connection, .now))
            return true
        }
        if !kept { Self.close(connection) }
    }

    /// Closes a connection without waiting. The closure keeps the object alive until the channel
    /// is closed: postgres-nio asserts (in debug builds) that a connection is closed before it goes.
    static func close(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}

/// One call's use of a connection: its statements, counted, and its transaction.
final class Session {
    let connection: PostgresConnection
    let logger: Logger
    /// Statements that got an answer (success or a server error).
    private(set) var statementsCompleted = 0
    /// False while a transaction is open or after a rollback failed: the connection must not serve
    /// another call then.
    private(set) var isClean = true

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Runs a statement and collects its rows.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            let rows = try await connection.query(query, logger: logger).collect()
            statementsCompleted += 1
            return rows
        } catch let error as PSQLError where error.code == .server {
            statementsCompleted += 1
            throw error
        }
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    func transaction<T>(_ body: () async throws -> T) async throws -> T {
        try await query("BEGIN")
        isClean = false
        let value: T
        do {
            value = try await body()
        } catch {
            if !connection.isClosed, (try? await query("ROLLBACK")) != nil { isClean = true }
            throw error
        }
        // A COMMIT that fails ends the transaction as well (rolled back), unless the connection
        // went with it, in which case the connection is dropped anyway.
        do {
            try await query("COMMIT")
        } catch let error as PSQLError where error.code == .server {
            isClean = true
            throw error
        }
        isClean = true
        return value
    }
}
