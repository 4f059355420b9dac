#if canImport(Glibc)
import Glibc
#endif
import CReelSocket
import Foundation
import Logging
import ReelClient
import ReelCore
import ReelCrashPoints
import ReelProtocol
import ReelStorage
import ReelStore

/// The new daemon's side of a take-over (`serve --take-over`), the steps before it opens the
/// store: fold the history with this version's reducers beside the daemon that serves it, follow
/// its commits until the fold is nearly level with it, ask it to hand over (`handOver`), receive
/// its listening socket, and wait for it to let go of the data directory.
///
/// Until the hand-over is asked, the running daemon serves as if nothing happened, and a failure
/// here leaves it serving. After, the running daemon stops (as at SIGTERM, answering every request
/// it had read, committing every dispatch it had accepted); connections that come meanwhile wait
/// in the socket's backlog for this one.
enum TakeOver {
    /// The fold is level enough to ask for the socket once a round of following folds at most
    /// this many actions: the store's open replays the rest while clients wait.
    static let levelEnough: UInt64 = 1_000
    /// How long the running daemon may take to send its socket, and then to stop.
    static let socketWait: Int32 = 10_000
    /// How long to look for the socket when the answer to `handOver` did not come.
    static let lostAnswerWait: Int32 = 1_000
    static let stopWait: Duration = .seconds(30)

    struct Prepared<State: StoreState> {
        var folded: FoldedState<State>
        var listener: CInt
        var lock: DataDirectoryLock
        /// The timeout of systemd's watchdog the old daemon fed, for this one to feed.
        var watchdogMicroseconds: UInt64?
    }

    static func prepare<State: StoreState>(
        _ definition: StoreDefinition<State>, configuration: DaemonConfiguration, notifier: SystemdNotifier, logger: Logger
    ) async throws -> Prepared<State> {
        // Connected first: without a daemon to take over from, there is nothing to fold for.
        let client: ReelClient
        do {
            var clientConfiguration = ReelClientConfiguration()
            clientConfiguration.reconnect = .disabled
            client = try await ReelClient.connect(socketPath: configuration.socketPath, configuration: clientConfiguration)
        } catch {
            throw StartupError(.io, "no daemon to take over from at \(configuration.socketPath): \(error)")
        }
        defer { Task { await client.close() } }
        // The served daemon's `stats` shows how far the fold got.
        let reducer = definition.identity.description
        let report = { (folded: UInt64, latest: UInt64, remaining: Double?) in
            let progress = TakeOverProgressReport(reducer: reducer, folded: folded, latest: latest, remainingSeconds: remaining)
            Task { _ = try? await client.call(Method.TakeOverProgress.self, progress) }
        }
        let fold = try foldBeside(definition, configuration: configuration, notifier: notifier, logger: logger, report: report)
        while true {
            let folded: UInt64
            do {
                folded = try fold.catchUp()
            } catch {
                throw StartupError(.storage, "cannot follow the running daemon's log: \(error.message)", underlying: error)
            }
            report(fold.folded.seq, fold.folded.seq, 0)
            if folded <= levelEnough { break }
        }
        logger.info("the fold is level with the running daemon: asking it to hand over", metadata: ["seq": "\(fold.folded.seq)"])
        CrashPoint.takeOverFolded.reach()
        let (listener, watchdog) = try await receiveSocket(from: client, configuration: configuration, logger: logger)
        CrashPoint.takeOverReceived.reach()
        let folded = fold.finish()
        let lock: DataDirectoryLock
        do {
            lock = try await acquireLock(configuration)
        } catch {
            close(listener)
            throw error
        }
        CrashPoint.takeOverOpening.reach()
        return Prepared(folded: folded, listener: listener, lock: lock, watchdogMicroseconds: watchdog)
    }

    /// The history folded with these reducers while the running daemon serves, with progress in
    /// the log and systemd's status.
    private static func foldBeside<State: StoreState>(
        _ definition: StoreDefinition<State>, configuration: DaemonConfiguration, notifier: SystemdNotifier, logger: Logger,
        report: @escaping (UInt64, UInt64, Double?) -> Void
    ) throws(StartupError) -> FoldBeside<State> {
        logger.info("taking over: folding the history beside the running daemon", metadata: ["reducer": "\(definition.identity)"])
        let started = ContinuousClock.now
        var lastReport = started
        do {
            let fold = try FoldBeside(path: configuration.dataDirectory, definition: definition) { reached, latest in
                let now = ContinuousClock.now
                guard now - lastReport >= .seconds(2) else { return }
                lastReport = now
                let elapsed = Double((now - started).components.seconds) + Double((now - started).components.attoseconds) / 1e18
                let remaining = reached == 0 ? nil : elapsed * Double(latest - reached) / Double(reached)
                let left = remaining.map { String(format: ", about %.0f s left", $0) } ?? ""
                report(reached, latest, remaining)
                logger.info("taking over: folding the history, seq \(reached) of \(latest)\(left)")
                notifier.notify(["STATUS=taking over: folding the history, seq \(reached) of \(latest)\(left)", "EXTEND_TIMEOUT_USEC=10000000"])
            }
            logger.info("taking over: history folded", metadata: ["seq": "\(fold.folded.seq)", "replayed": "\(fold.replayed)", "took": "\(ContinuousClock.now - started)"])
            for refusal in fold.refused.prefix(10) {
                logger.warning("logged action \(refusal.seq) is refused by these reducers and left out: \(refusal.reason)")
            }
            return fold
        } catch {
            let code: StartupError.Code = error.code == .unreadableHistory || (error.underlying as? StorageError)?.code == .incompatible ? .incompatibleData : .storage
            throw StartupError(code, "cannot take over \(configuration.dataDirectory): \(error.message)", underlying: error)
        }
    }

    /// Asks the running daemon for its listening socket and receives it.
    private static func receiveSocket(
        from client: ReelClient, configuration: DaemonConfiguration, logger: Logger
    ) async throws -> (listener: CInt, watchdogMicroseconds: UInt64?) {
        let receiver = URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent().path + "/.reel-take-over-\(getpid())"
        unlink(receiver)
        let waiting = reel_listen_unix(receiver, 1)
        guard waiting >= 0 else {
            throw StartupError(.io, "cannot listen at \(receiver) for the running daemon's socket: \(String(cString: strerror(errno)))")
        }
        defer {
            close(waiting)
            unlink(receiver)
        }
        var refusal: (any Error)?
        var watchdog: UInt64?
        do {
            let answer = try await client.call(Method.HandOver.self, HandOverParams(receiver: receiver))
            watchdog = answer.watchdogMicroseconds
            logger.info("the running daemon hands over", metadata: ["seq": "\(answer.seq)"])
        } catch {
            // An answer lost with its daemon (killed once it had sent the socket) still leaves
            // the socket here to serve: look for it a moment before giving up.
            refusal = error
        }
        var note: UInt64 = 0
        var hasNote: CInt = 0
        let listener = reel_receive_descriptor(waiting, refusal == nil ? socketWait : lostAnswerWait, &note, &hasNote)
        guard listener >= 0 else {
            if let refusal { throw StartupError(.io, "the daemon at \(configuration.socketPath) did not hand over: \(refusal)") }
            throw StartupError(.io, "the running daemon's socket did not come: \(String(cString: strerror(errno)))")
        }
        if let refusal { logger.warning("the hand-over's answer was lost (\(refusal)), but the socket came: going on") }
        // The socket's note is the watchdog's timeout (0: none); a daemon of an older version
        // sends none, and its answer says it.
        if hasNote != 0 { watchdog = note == 0 ? nil : note }
        return (listener, watchdog)
    }

    /// The data directory's lock, once the daemon that handed over has let it go.
    private static func acquireLock(_ configuration: DaemonConfiguration) async throws -> DataDirectoryLock {
        let deadline = ContinuousClock.now + stopWait
        while true {
            let attempt = Result { () throws(StartupError) in try DataDirectoryLock.acquire(for: configuration) }
            switch attempt {
            case .success(let lock):
                return lock
            case .failure(let error):
                guard error.code == .alreadyRunning, ContinuousClock.now < deadline else { throw error }
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

extension TakeOver {
    /// The environment variable that tells a take-over started by systemd's `ExecReload=` (see
    /// ``runDetached(arguments:environment:)``) where to say that it serves.
    static let reportVariable = "REEL_TAKE_OVER_REPORT_FD"

    /// Under systemd, `systemctl reload reeld` runs `reeld --take-over` as the unit's `ExecReload=`
    /// (`$MAINPID` names the daemon it serves): that command must end, and the daemon taking over
    /// must live on as the unit's main process. So it starts itself again, detached, and waits
    /// until that copy serves (it then tells systemd `MAINPID=` its pid, with `NotifyAccess=all`),
    /// or fails.
    ///
    /// - Returns: The exit status for this process, or `nil` when this is not such a command (run
    ///   the daemon here).
    static func runDetached(arguments: [String], environment: [String: String]) -> Int32? {
        guard let main = environment["MAINPID"].flatMap(Int32.init), main != getpid(), environment[reportVariable] == nil else {
            return nil
        }
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        var child = environment
        child[reportVariable] = String(ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, ends[0])
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(0x80))  // POSIX_SPAWN_SETSID (glibc): a session of its own
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = child.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, envp)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            FileHandle.standardError.write(Data("cannot start the daemon taking over: \(String(cString: strerror(spawned)))\n".utf8))
            return 71
        }
        // The copy writes "serving" once it serves; its pipe closes without a word when it fails.
        var report: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            report += buffer[..<count]
        }
        close(ends[0])
        if String(decoding: report, as: UTF8.self).hasPrefix("serving") { return 0 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        return exited ? (status >> 8) & 0xff : 70
    }

    /// Tells the command that started this copy (``runDetached(arguments:environment:)``) that it
    /// serves.
    static func reportServing(environment: [String: String]) {
        guard let fd = environment[reportVariable].flatMap(CInt.init) else { return }
        let message = Array("serving\n".utf8)
        _ = message.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
