import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process run to completion, with what `time -v` would say about it: how long it took
/// and its peak resident memory (from `wait4`, so it is the child's own, not the largest child's).
struct MeasuredRun {
    var status: Int32
    var elapsed: Duration
    /// Peak resident set size, KiB.
    var maxResidentKiB: Int
    var output: String
}

enum Subprocess {
    /// Runs `executable` with `arguments`, feeding it what `input` writes (on another thread, into
    /// its standard input) and collecting its standard output.
    static func run(
        _ executable: String, _ arguments: [String], input: (@Sendable (FileHandle) -> Void)? = nil
    ) throws -> MeasuredRun {
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        guard pipe(&stdoutPipe) == 0, input == nil || pipe(&stdinPipe) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, stdoutPipe[0])
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, stdinPipe[1])
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let clock = ContinuousClock()
        let start = clock.now
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(stdoutPipe[1])
        if input != nil { close(stdinPipe[0]) }
        guard spawned == 0 else {
            close(stdoutPipe[0])
            if input != nil { close(stdinPipe[1]) }
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
        }
        let feeder: Thread?
        if let input {
            // A child that exits before reading everything must fail the write, not end this
            // process with SIGPIPE.
            signal(SIGPIPE, SIG_IGN)
            let handle = FileHandle(fileDescriptor: stdinPipe[1], closeOnDealloc: true)
            feeder = Thread { input(handle); try? handle.close() }
            feeder?.start()
        } else {
            feeder = nil
        }
        let output = FileHandle(fileDescriptor: stdoutPipe[0], closeOnDealloc: true).readDataToEndOfFile()
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        _ = feeder
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return MeasuredRun(
            status: exit, elapsed: clock.now - start, maxResidentKiB: usage.ru_maxrss,
            output: String(decoding: output, as: UTF8.self)
        )
    }

    /// Peak resident memory of a running process so far (`VmHWM`), KiB.
    static func peakResidentKiB(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}
