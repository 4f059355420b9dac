import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `reeld` under systemd's protocols, with the test playing systemd's part: readiness, status and
/// watchdog messages on a datagram socket, and a listening socket passed in (socket activation).
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldSystemdTests {
    @Test func readyStatusAndWatchdogPingsWhileTheWriterIsHealthy() async throws {
        let dir = try TemporaryDirectory()
        let systemd = try NotifyListener(path: dir.sub("notify"))
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            environment: ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "200000"]
        )
        try await daemon.start()
        try await waitUntil("READY=1") { systemd.count("READY=1") == 1 }
        try await waitUntil("three watchdog pings") { systemd.count("WATCHDOG=1") >= 3 }
        try await waitUntil("a status line") { systemd.statuses.contains("seq 0, 0 connections, 0 subscriptions") }
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            _ = try await connection.request(1, "dispatch", Params.set("/n", 1))
            try await waitUntil("the status to follow the seq") { systemd.statuses.contains("seq 1, 1 connection, 0 subscriptions") }
        }
        #expect(try await daemon.stop() == 0)
        #expect(systemd.count("STOPPING=1") == 1)
    }

    @Test func aWriterThatHangsGetsNoMoreWatchdogPings() async throws {
        let dir = try TemporaryDirectory()
        let systemd = try NotifyListener(path: dir.sub("notify"))
        // The second commit hangs for good before it is written, as on a disk that stopped answering.
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            environment: ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "200000", "REEL_CRASH_POINT": "commit.before@2:hang"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/n", 1))["result"] == ["seq": 1])
        }
        try await waitUntil("watchdog pings") { systemd.count("WATCHDOG=1") >= 3 }
        let hung = try RawSocket.connectUnix(daemon.socketPath)
        defer { close(hung) }
        try RawSocket.send(hung, Array(#"{"jsonrpc":"2.0","id":2,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/n","value":2}}}}"#.utf8 + [10]))
        try await waitUntil("the commit to hang at its crash point (a thread of reeld in nanosleep)") {
            daemon.hasThreadInSleep
        }
        // The sleeps below are the thing under test: an absence of pings for ten ping periods
        // each (a timer that pinged whatever the writer does would send ten). In the first, a
        // probe answered just before the hang may still land one; in the second, none may come.
        let pingsAtHang = systemd.count("WATCHDOG=1")
        try await Task.sleep(for: .seconds(1))
        let pingsAfterHang = systemd.count("WATCHDOG=1")
        #expect(pingsAfterHang <= pingsAtHang + 1, "pings went on while the writer hung")
        try await Task.sleep(for: .seconds(1))
        #expect(systemd.count("WATCHDOG=1") == pingsAfterHang, "pings went on while the writer hung")
        _ = try await daemon.stop(signal: SIGKILL)
    }

    @Test func servesTheSocketSystemdPassesAndLeavesItsFileAlone() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.sub("activated.sock")
        let listener = try Self.listeningSocket(at: path, mode: 0o600)
        defer { close(listener) }
        let daemon = try SpawnedProcess(
            try PackageExecutable.url("reeld").path, ["--data-dir", dir.sub("data"), "--log-level", "warning"],
            listeningSocket: listener, stderrPath: dir.sub("stderr")
        )
        // Connections made before the daemon is ready wait in the socket's backlog.
        try await TestConnection.open(socketPath: path) { connection throws in
            #expect(try await connection.request(1, "dispatch", Params.set("/n", 7))["result"] == ["seq": 1])
            #expect(try await connection.request(2, "get", ["path": "/n"])["result"] == ["seq": 1, "value": 7])
        }
        #expect(try await daemon.stop() == 0, "stderr: \((try? String(contentsOfFile: dir.sub("stderr"), encoding: .utf8)) ?? "")")
        #expect(FileManager.default.fileExists(atPath: path), "reeld removed the socket file systemd owns")
        #expect(!FileManager.default.fileExists(atPath: dir.sub("data/reel.sock")), "reeld bound a socket of its own too")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "reeld changed the mode systemd set")
    }

    @Test func aWorldWritableActivatedSocketIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.sub("open.sock")
        let listener = try Self.listeningSocket(at: path, mode: 0o666)
        defer { close(listener) }
        let daemon = try SpawnedProcess(
            try PackageExecutable.url("reeld").path, ["--data-dir", dir.sub("data")], listeningSocket: listener,
            stderrPath: dir.sub("stderr")
        )
        let status = try await daemon.wait()
        let stderr = try String(contentsOfFile: dir.sub("stderr"), encoding: .utf8)
        #expect(status == 77, "stderr: \(stderr)")
        #expect(stderr.contains("world-writable") && stderr.split(separator: "\n").count == 1, "stderr: \(stderr)")
    }

    /// A bound, listening Unix stream socket with its file's mode set, as systemd makes it.
    static func listeningSocket(at path: String, mode: mode_t) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0, chmod(path, mode) == 0 else {
            throw SpawnError("cannot listen on \(path): errno \(errno)")
        }
        return descriptor
    }
}

extension ReeldSystemdTests {
    /// A daemon in `dir` under a test playing systemd, which feeds a watchdog of 200 ms, is
    /// ready, and holds `/n` = 1.
    static func watchedDaemonHolding1(
        in dir: borrowing TemporaryDirectory, environment: [String: String] = [:]
    ) async throws -> (NotifyListener, SpawnedDaemon) {
        let systemd = try NotifyListener(path: dir.sub("notify"))
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            environment: ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "200000"].merging(environment) { $1 }
        )
        try await daemon.start()
        try await waitUntil("READY=1") { systemd.count("READY=1") == 1 }
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            _ = try await connection.request(1, "dispatch", Params.set("/n", 1))
        }
        return (systemd, daemon)
    }

    /// `systemctl reload reeld` with `ExecReload=reeld --take-over` (`$MAINPID` set): the command
    /// starts the daemon taking over detached, returns once it serves, and that daemon tells
    /// systemd it is the unit's main process now and feeds the watchdog the old one fed.
    @Test func aTakeOverRunAsExecReloadLeavesTheNewDaemonAsTheUnitsMainProcess() async throws {
        let dir = try TemporaryDirectory()
        let (systemd, old) = try await Self.watchedDaemonHolding1(in: dir)
        // Reaped with `waitpid` as soon as it ends (Foundation's `Process` reaps late on a busy
        // machine), though it leaves a detached daemon behind.
        let reload = try await SpawnedProcess(
            try PackageExecutable.url("reeld").path,
            ["--data-dir", dir.sub("data"), "--socket", dir.sub("reel.sock"), "--log-level", "warning", "--take-over"],
            environment: ["NOTIFY_SOCKET": systemd.path, "MAINPID": String(old.processIdentifier)], stderrPath: dir.sub("reload.err")
        ).wait(within: .seconds(50))
        #expect(reload == 0, "the command ends once the new daemon serves")
        #expect(try await old.stop(signal: 0, within: .seconds(30)) == 0, "the old daemon hands over and exits")
        // The new daemon, detached from the command, named itself the main process.
        let announced = systemd.messages.first { $0.contains { $0.hasPrefix("MAINPID=") } }
        let pid = try #require(announced?.first { $0.hasPrefix("MAINPID=") }.flatMap { Int32($0.dropFirst("MAINPID=".count)) })
        #expect(pid != old.processIdentifier && kill(pid, 0) == 0)
        #expect(announced?.contains("READY=1") == true)
        let pings = systemd.count("WATCHDOG=1")
        let log = { (try? String(contentsOfFile: dir.sub("reload.err"), encoding: .utf8)) ?? "" }
        try await waitUntil("the new daemon's watchdog pings (its log: \(log()))") { systemd.count("WATCHDOG=1") >= pings + 3 }
        try await TestConnection.open(socketPath: dir.sub("reel.sock")) { connection throws in
            #expect(try await connection.request(2, "get", ["path": "/n"])["result"]?["value"] == 1)
        }
        kill(pid, SIGTERM)
        try await waitUntil("the new daemon to stop") { kill(pid, 0) != 0 }
    }
}

extension ReeldSystemdTests {
    /// The old daemon killed once it has sent its socket, before its answer to `handOver` is
    /// written: the newcomer serves on, and feeds the watchdog the old one fed (its timeout came
    /// with the socket, not only in the answer that was lost).
    @Test func aNewcomerWhoseHandOverAnswerWasLostStillFeedsTheWatchdog() async throws {
        let dir = try TemporaryDirectory()
        let (systemd, old) = try await Self.watchedDaemonHolding1(in: dir, environment: ["REEL_CRASH_POINT": "handover.sent"])
        let new = try SpawnedProcess(
            try PackageExecutable.url("reeld").path,
            ["--data-dir", dir.sub("data"), "--socket", dir.sub("reel.sock"), "--log-level", "warning", "--take-over"],
            environment: ["NOTIFY_SOCKET": systemd.path], stderrPath: dir.sub("new.err")
        )
        func newcomersLog() -> String { (try? String(contentsOfFile: dir.sub("new.err"), encoding: .utf8)) ?? "" }
        #expect(try await old.stop(signal: 0, within: .seconds(30)) == 9, "the old daemon is killed at its crash point")
        // Connections wait in the socket's backlog until the newcomer serves.
        try await TestConnection.open(socketPath: dir.sub("reel.sock")) { connection throws in
            #expect(try await connection.request(2, "get", ["path": "/n"])["result"]?["value"] == 1)
        }
        #expect(newcomersLog().contains("the hand-over's answer was lost"), "the answer was not lost: \(newcomersLog())")
        let pings = systemd.count("WATCHDOG=1")
        try await waitUntil("the newcomer's watchdog pings (its log: \(newcomersLog()))") { systemd.count("WATCHDOG=1") >= pings + 3 }
        #expect(try await new.stop() == 0)
    }
}
