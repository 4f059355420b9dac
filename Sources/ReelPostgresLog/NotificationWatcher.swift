import Dispatch
import Foundation
import Logging
import PostgresNIO

/// Wakes the store when another node may have appended: each append notifies channel `reel_log`
/// with its last seq (delivered at commit), and this keeps one connection listening to it.
///
/// Notifications are an optimisation, never the only way: one is lost when the connection is
/// down, and a connection can die silently (a host gone, a network cut) so that nothing ever comes
/// again. Hence:
/// - a wake-up with no seq every `pollInterval`, whatever happens (the store then asks for the
///   latest seq itself);
/// - a wake-up with no seq each time listening (re)starts, for what was appended meanwhile;
/// - a liveness probe (`SELECT 1`) on the listening connection every few seconds, which closes the
///   connection if it gets no answer in time, so that a dead connection is replaced;
/// - reconnection with a backoff from 0.1 s to 2 s while the server is away.
final class NotificationWatcher: @unchecked Sendable {
    // @unchecked: the mutable state is behind `lock`; the rest is immutable.
    static let channel = "reel_log"
    static let minimumBackoff: Duration = .milliseconds(100)
    static let maximumBackoff: Duration = .seconds(2)
    static let livenessInterval: Duration = .seconds(5)

    private let source: ConnectionSource
    private let executor: SharedLogExecutor
    private let pollInterval: Duration
    private let probeTimeout: Duration
    private let logger: Logger
    private let location: String
    private let wake: @Sendable (UInt64?) -> Void
    private let lock = NSLock()
    private var stopped = false
    private var tasks: [Task<Void, Never>] = []
    private let ended = DispatchSemaphore(value: 0)

    init(
        source: ConnectionSource, executor: SharedLogExecutor, pollInterval: Duration, probeTimeout: Duration,
        logger: Logger, location: String, wake: @escaping @Sendable (UInt64?) -> Void
    ) {
        self.source = source
        self.executor = executor
        self.pollInterval = pollInterval
        self.probeTimeout = probeTimeout
        self.logger = logger
        self.location = location
        self.wake = wake
    }

    func start() {
        let listening = Task(executorPreference: executor) {
            await self.listenUntilCancelled()
            self.ended.signal()
        }
        let polling = Task(executorPreference: executor) {
            while (try? await Task.sleep(for: self.pollInterval)) != nil {
                self.deliver(nil)
            }
            self.ended.signal()
        }
        lock.withLock { tasks = [listening, polling] }
    }

    /// Stops both tasks and waits (up to a second) for them to end, so that no wake-up comes after
    /// this returns. Not waiting when called from a wake-up itself, which runs on the executor the
    /// tasks need to end.
    func stop() {
        let tasks = lock.withLock {
            stopped = true
            defer { self.tasks.removeAll() }
            return self.tasks
        }
        tasks.forEach { $0.cancel() }
        guard !executor.isCurrent else { return }
        let deadline = DispatchTime.now() + .seconds(1)
        for _ in tasks where ended.wait(timeout: deadline) == .timedOut {
            logger.warning("shared log: the watcher of \(location) did not stop within 1 s")
            return
        }
    }

    private func deliver(_ seq: UInt64?) {
        guard !lock.withLock({ stopped }) else { return }
        wake(seq)
    }

    private func listenUntilCancelled() async {
        var backoff = Self.minimumBackoff
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await source.connect()
                defer { ConnectionSource.close(connection) }
                try await withTaskCancellationHandler {
                    try await connection.listen(on: Self.channel) { notifications in
                        if failures > 0 { logger.info("shared log: listening to \(location) again") }
                        failures = 0
                        backoff = Self.minimumBackoff
                        deliver(nil)
                        try await follow(notifications, on: connection)
                    }
                } onCancel: {
                    ConnectionSource.close(connection)
                }
            } catch {
                guard !Task.isCancelled else { return }
                failures += 1
                let reason = PostgresFailure(error).reason
                // The first failure in a row is news; the next ones, while the server is away, are not.
                if failures == 1 {
                    logger.warning("shared log: not listening to \(location) (\(reason)); reconnecting, and polling meanwhile")
                } else {
                    logger.debug("shared log: still not listening to \(location) (\(reason))")
                }
            }
            guard (try? await Task.sleep(for: backoff)) != nil else { return }
            backoff = min(backoff * 2, Self.maximumBackoff)
        }
    }

    /// Delivers each notification until the connection ends, probing it meanwhile.
    private func follow(_ notifications: PostgresNotificationSequence, on connection: PostgresConnection) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await notification in notifications {
                    self.deliver(UInt64(notification.payload))
                }
                throw PostgresFailure.connection(reason: "the notifications ended")
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: Self.livenessInterval)
                    try await self.probe(connection)
                }
            }
            // Either ends only by an error (or cancellation): the connection is done for.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// `SELECT 1`, closing the connection when no answer comes within the timeout (a query
    /// cannot be cancelled otherwise; closing fails it, and the notifications with it).
    private func probe(_ connection: PostgresConnection) async throws {
        let timeout = probeTimeout
        let watchdog = Task(executorPreference: executor) {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            ConnectionSource.close(connection)
        }
        defer { watchdog.cancel() }
        _ = try await connection.query("SELECT 1", logger: logger).collect()
    }
}

extension SharedLogExecutor {
    /// Whether the calling code runs on this executor's queue.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) }
}
