import Foundation
import Logging
import ReelDaemon
import ReelTestSupport
import Synchronization
import Testing

/// The watchdog's rules, with the writer's health played by the test and systemd's socket by a
/// ``NotifyListener``. (ReeldSystemdTests runs the real daemon, with a writer that really hangs.)
@Suite(.timeLimit(.minutes(1)), .heavy) struct SystemdWatchdogTests {
    @Test func pingsFollowHealthyProbesOnly() async throws {
        let dir = try TemporaryDirectory()
        let systemd = try NotifyListener(path: dir.sub("notify"))
        let healthy = Atomic(true)
        let probes = Atomic(0)
        let environment = ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "40000"]
        let watchdog = SystemdWatchdog(
            notifier: SystemdNotifier(environment: environment), environment: environment, logger: Logger(label: "test"),
            probe: {
                probes.add(1, ordering: .relaxed)
                return healthy.load(ordering: .relaxed)
            },
            status: { "seq 3, 0 connections, 0 subscriptions" }
        )
        let running = Task(executorPreference: TestThreads.shared) { try await watchdog.run() }
        try await waitUntil("pings") { systemd.count("WATCHDOG=1") >= 3 }
        #expect(systemd.statuses == ["seq 3, 0 connections, 0 subscriptions"], "an unchanged status is sent once")

        healthy.store(false, ordering: .relaxed)
        let probesBefore = probes.load(ordering: .relaxed)
        try await waitUntil("the status saying why") { systemd.statuses.last?.contains("cannot commit") == true }
        let pings = systemd.count("WATCHDOG=1")
        try await waitUntil("more probes") { probes.load(ordering: .relaxed) >= probesBefore + 5 }
        #expect(systemd.count("WATCHDOG=1") == pings, "pinged after an unhealthy probe")

        healthy.store(true, ordering: .relaxed)
        try await waitUntil("pings again") { systemd.count("WATCHDOG=1") > pings }
        running.cancel()
        _ = try? await running.value
    }

    @Test func theIntervalIsForThisProcessOnly() {
        let pid = getpid()
        #expect(SystemdWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000"]) == .seconds(30))
        #expect(SystemdWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(pid)"]) == .seconds(30))
        #expect(SystemdWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(pid + 1)"]) == nil)
        #expect(SystemdWatchdog.interval(environment: ["WATCHDOG_USEC": "0"]) == nil)
        #expect(SystemdWatchdog.interval(environment: [:]) == nil)
    }

    @Test func socketsPassedToAnotherProcessAreNotAdopted() throws {
        #expect(try SocketActivation.adopt(environment: ["LISTEN_FDS": "1", "LISTEN_PID": "\(getpid() + 1)"]) == nil)
        #expect(try SocketActivation.adopt(environment: [:]) == nil)
        let error = #expect(throws: StartupError.self) {
            try SocketActivation.adopt(environment: ["LISTEN_FDS": "2", "LISTEN_PID": "\(getpid())"])
        }
        #expect(error?.code == .invalidSetting)
        #expect(error?.message.contains("single ListenStream=") == true)
    }
}
