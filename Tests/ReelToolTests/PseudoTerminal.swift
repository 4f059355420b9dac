import Foundation
import ReelTestSupport

/// Runs a program of this package on a pseudo-terminal of a given size, as a person runs it in a
/// terminal: its stdin, stdout and stderr are the terminal's end (`isatty` holds, `TIOCGWINSZ`
/// gives the size), and what it prints is read from the other end, stdout and stderr together.
enum PseudoTerminal {
    /// Runs `name` to its end and returns what the terminal showed (`\r\n` read back as `\n`)
    /// and the exit status. `$LINES` and `$COLUMNS` are removed from the environment, so the
    /// program asks the terminal for its size.
    static func run(
        _ name: String, _ arguments: [String], rows: UInt16, columns: UInt16, environment: [String: String] = [:]
    ) async throws -> (status: Int32, shown: String) {
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        var controller: Int32 = -1, terminal: Int32 = -1
        guard openpty(&controller, &terminal, nil, nil, &size) == 0 else { throw SpawnError("openpty failed: errno \(errno)") }
        let executable = try PackageExecutable.url(name).path
        var variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        variables["LINES"] = nil
        variables["COLUMNS"] = nil

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in [0, 1, 2] { posix_spawn_file_actions_adddup2(&actions, terminal, descriptor) }
        posix_spawn_file_actions_addclose(&actions, controller)
        posix_spawn_file_actions_addclose(&actions, terminal)
        let cArguments = ([executable] + arguments).map { strdup($0) } + [nil]
        let cEnvironment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, cArguments, cEnvironment)
        // Only the child holds the terminal's end now: once it exits, reads end (EIO).
        close(terminal)
        guard spawned == 0 else {
            close(controller)
            throw SpawnError("cannot start \(executable): error \(spawned)")
        }
        let pid = child
        let reading = controller
        // Blocking reads and the wait on a thread of their own, not on the cooperative pool.
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(reading, &buffer, buffer.count)
                    if count > 0 {
                        bytes += buffer[0..<count]
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        break
                    }
                }
                close(reading)
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                let status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
                let shown = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
                continuation.resume(returning: (status, shown))
            }
        }
    }
}
