import Foundation

/// A program started with `posix_spawn`, for what `Process` cannot do: hand a descriptor to the
/// child as descriptor 3 and set `LISTEN_PID` to the child's own pid, as systemd does for a
/// socket-activated service (through `/bin/sh`, whose `exec` keeps its pid).
public final class SpawnedProcess: @unchecked Sendable {
    // @unchecked: `status` is written only by `wait`, which one task calls.
    public let pid: pid_t
    private var status: Int32?

    /// Starts `executable` with `arguments`; `environment` adds to this process's, and
    /// `listeningSocket`, if given, becomes the child's descriptor 3 with `LISTEN_FDS=1` and
    /// `LISTEN_PID` set to the child's pid.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], listeningSocket: Int32? = nil,
        stderrPath: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stderrPath {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        var argv = [executable] + arguments
        var program = executable
        if let listeningSocket {
            posix_spawn_file_actions_adddup2(&actions, listeningSocket, 3)
            variables["LISTEN_FDS"] = "1"
            variables["LISTEN_FDNAMES"] = "reeld.socket"
            program = "/bin/sh"
            argv = ["/bin/sh", "-c", #"LISTEN_PID=$$ exec "$0" "$@""#] + argv
        }
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, program, &actions, nil, cArguments, cEnvironment)
        guard result == 0 else { throw SpawnError("cannot start \(program): error \(result)") }
        pid = child
    }

    /// Whether the process is still running (reaps it if it has ended).
    public var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid {
            status = raw
            return false
        }
        return true
    }

    /// Sends `signal` and waits up to `timeout` for the end; the exit status (128 + n for a
    /// signal n).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, within timeout: Duration = .seconds(10)) async throws -> Int32 {
        if isRunning { kill(pid, signal) }
        return try await wait(within: timeout)
    }

    /// Waits up to `timeout` for the process to end by itself; its exit status as ``stop(signal:within:)``.
    public func wait(within timeout: Duration = .seconds(10)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                throw SpawnError("pid \(pid) did not end within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let raw = status ?? 0
        let signalled = raw & 0x7f
        return signalled == 0 ? (raw >> 8) & 0xff : 128 + signalled
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }
}
