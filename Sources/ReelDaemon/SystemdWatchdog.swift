import Logging
import ServiceLifecycle

/// Keeps systemd's watchdog fed while the writer is healthy, and the unit's status line current.
///
/// With `WatchdogSec=` in the unit, systemd sets `$WATCHDOG_USEC` and restarts the daemon when no
/// `WATCHDOG=1` arrives in that time. A timer that pings whatever happens would keep a daemon
/// whose writer is stuck (a sync that never returns, a deadlock) alive forever; here each ping
/// follows a `probe` that went through the writer's own queue and came back healthy, so a stuck
/// writer stops the pings, and a writer that can no longer commit (a failed sync leaves the disk's
/// contents unknown until a restart) answers unhealthy and stops them too: systemd then restarts
/// the daemon, which is the remedy. Pings come every half of the interval, as sd_watchdog_enabled(3)
/// advises.
///
/// Under any `Type=notify` unit it also sends `STATUS=` when the figures change (at most every few
/// seconds), so `systemctl status reeld` shows the seq and the connections.
public struct SystemdWatchdog: Service {
    let notifier: SystemdNotifier
    let interval: Duration?
    let probe: @Sendable () async -> Bool
    let status: @Sendable () -> String
    let logger: Logger

    /// - Parameters:
    ///   - environment: the process environment (`$WATCHDOG_USEC`, `$WATCHDOG_PID`, `$NOTIFY_SOCKET`).
    ///   - probe: whether the writer is alive and can commit (``ReelStore/Store/probeWriter()``).
    ///   - status: the one-line status, such as `seq 42, 3 connections, 1 subscription`.
    public init(
        notifier: SystemdNotifier, environment: [String: String], logger: Logger,
        probe: @escaping @Sendable () async -> Bool, status: @escaping @Sendable () -> String
    ) {
        self.notifier = notifier
        self.interval = SystemdWatchdog.interval(environment: environment)
        self.probe = probe
        self.status = status
        self.logger = logger
    }

    /// The watchdog's timeout from `$WATCHDOG_USEC`, if it is set for this process (`$WATCHDOG_PID`
    /// absent or this pid).
    public static func interval(environment: [String: String], pid: Int32 = getpid()) -> Duration? {
        microseconds(environment: environment, pid: pid).map { .microseconds($0) }
    }

    /// ``interval(environment:pid:)`` as systemd gives it, in microseconds.
    public static func microseconds(environment: [String: String], pid: Int32 = getpid()) -> UInt64? {
        guard let text = environment["WATCHDOG_USEC"], let micros = UInt64(text), micros > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], !owner.isEmpty, Int32(owner) != pid { return nil }
        return micros
    }

    public func run() async throws {
        guard notifier.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        if let interval { logger.info("feeding systemd's watchdog", metadata: ["timeout": "\(interval)"]) }
        await cancelWhenGracefulShutdown { await feed() }
    }

    private func feed() async {
        let period = interval.map { $0 / 2 } ?? .seconds(5)
        var lastStatus = ""
        var healthy = true
        do {
            while !Task.isCancelled {
                var assignments: [String] = []
                if interval != nil {
                    let alive = await probe()
                    if alive {
                        assignments.append("WATCHDOG=1")
                    } else if healthy {
                        logger.critical("the writer cannot commit: no more watchdog pings, so that systemd restarts reeld")
                    }
                    healthy = alive
                }
                let line = healthy ? status() : "the writer cannot commit; waiting for the watchdog to restart reeld"
                if line != lastStatus {
                    assignments.append("STATUS=\(line)")
                    lastStatus = line
                }
                if !assignments.isEmpty { notifier.notify(assignments) }
                try await Task.sleep(for: period)
            }
        } catch {
            // Cancelled: the daemon is stopping.
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
