import Foundation

/// An executable of this package (`reeld`, `reel`, `reel-rpg`…), found next to the test bundle,
/// where `swift build` puts every product.
public enum PackageExecutable {
    public static func url(_ name: String) throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw SpawnError("no \(name) executable near \(CommandLine.arguments[0]); build it with `swift build`")
    }
}

/// The outcome of running a program to its end.
public struct ProgramResult: Sendable {
    public var status: Int32
    public var output: String
    public var errors: String
}

/// Runs a program of this package to its end, with `input` on its stdin, and collects its output.
/// Output is read while the program runs, so a large output cannot fill the pipe and stall it.
public func runProgram(
    _ name: String, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil,
    currentDirectory: String? = nil
) async throws -> ProgramResult {
    try await runCommand(
        PackageExecutable.url(name), arguments, input: input, environment: environment, currentDirectory: currentDirectory
    )
}

/// Runs any program (such as `/usr/bin/setpriv`) to its end, as ``runProgram(_:_:input:environment:currentDirectory:)``
/// runs one of this package.
public func runCommand(
    _ executable: URL, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil,
    currentDirectory: String? = nil
) async throws -> ProgramResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let output = Pipe(), errors = Pipe(), stdin = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    try process.run()
    if let input {
        try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
        try stdin.fileHandleForWriting.close()
    }
    async let out = readToEnd(output.fileHandleForReading)
    async let err = readToEnd(errors.fileHandleForReading)
    let (outData, errData) = await (out, err)
    while process.isRunning { try await Task.sleep(for: .milliseconds(5)) }
    return ProgramResult(
        status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
        errors: String(decoding: errData, as: UTF8.self)
    )
}

/// Reads a pipe to its end on a thread of its own: a blocking read on one of the few threads of
/// Swift's cooperative pool could starve the very tasks the program is waiting for.
func readToEnd(_ handle: FileHandle) async -> Data {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: handle.readDataToEndOfFile()) }
    }
}

/// A daemon of this package (`reeld`, or an app's `serve`) running on a temporary data directory
/// and socket until stopped.
public final class SpawnedDaemon: @unchecked Sendable {
    // @unchecked: `Process` is not Sendable; tests use one daemon from one task at a time.
    public let dataDirectory: String
    public let socketPath: String
    /// The daemon's process id, once started.
    public var pid: Int32 { process.processIdentifier }
    private let executable: String
    private let arguments: [String]
    private let environment: [String: String]
    private var process = Process()
    private var stderrPipe = Pipe()

    /// - Parameters:
    ///   - executable: `reeld`, or an app such as `reel-rpg`.
    ///   - prefix: Arguments before the daemon's own, such as `["serve"]` for an app.
    ///   - extraArguments: More daemon flags, such as `--checkpoint-every 5`.
    public init(
        executable: String = "reeld", prefix: [String] = [], dataDirectory: String, socketPath: String, extraArguments: [String] = [],
        environment: [String: String] = [:]
    ) {
        self.executable = executable
        self.environment = environment
        self.dataDirectory = dataDirectory
        self.socketPath = socketPath
        arguments = prefix + ["--data-dir", dataDirectory, "--socket", socketPath, "--log-level", "warning"] + extraArguments
    }

    /// Starts the daemon and waits until it listens on its socket (within 30 s: a start takes a
    /// fraction of a second, but writes its 64 MiB journal's space, which a busy disk slows).
    public func start() async throws {
        try launch()
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if !process.isRunning { throw SpawnError("\(executable) exited at start: \(stderr)") }
            if Self.listens(socketPath) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw SpawnError("\(executable) did not listen on \(socketPath) within 30 s")
    }

    /// Sends a signal and waits up to `timeout` for the process to end; returns its exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, within timeout: Duration = .seconds(10)) async throws -> Int32 {
        kill(process.processIdentifier, signal)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Ended in time but not yet reaped: Foundation learns of a child's end on a thread of its
        // own, which a busy machine held up past the deadline (the daemon a zombie, `swift test`
        // beside a busy loop: one run in ten). The daemon did stop: wait for the reaping.
        let reaped = ContinuousClock.now + .seconds(30)
        while process.isRunning && Self.hasEnded(process.processIdentifier) && ContinuousClock.now < reaped {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard !process.isRunning else {
            throw SpawnError("""
                \(executable) did not stop within \(timeout) after signal \(signal); its threads:
                \(Self.threadStates(of: process.processIdentifier))
                """)
        }
        return process.terminationStatus
    }

    /// Whether the process has ended and waits only to be reaped (a zombie), or is gone.
    static func hasEnded(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        let state = schedulingState(inStat: stat)
        return state == "Z" || state == "X"
    }

    /// The state letter of a `/proc/…/stat` line ("pid (name) S …": it follows the name's closing
    /// parenthesis).
    static func schedulingState(inStat stat: String) -> Substring? {
        stat.split(separator: ")").last?.split(separator: " ").first
    }

    /// What each thread of a process is doing, as the kernel sees it (name, state, the system call
    /// it is in and where it waits): the clue to why a process does not end.
    static func threadStates(of pid: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        func read(_ path: String) -> String {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return tasks.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.map { task in
            let directory = "/proc/\(pid)/task/\(task)"
            let state = schedulingState(inStat: read("\(directory)/stat")) ?? "?"
            let syscall = read("\(directory)/syscall").split(separator: " ").first ?? "?"
            return "  \(task) \(read("\(directory)/comm")) state \(state) syscall \(syscall) waits in \(read("\(directory)/wchan"))"
        }.joined(separator: "\n")
    }

    /// Whether a thread of the daemon sleeps in `nanosleep` or `clock_nanosleep`: where a
    /// `REEL_CRASH_POINT=…:hang` leaves the thread that reached it (nothing else in the daemon
    /// sleeps so; its threads wait on futexes and epoll).
    public var hasThreadInSleep: Bool {
        let pid = process.processIdentifier
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        #if arch(x86_64)
        let sleeps: Set<Substring> = ["35", "230"]
        #elseif arch(arm64)
        let sleeps: Set<Substring> = ["101", "115"]
        #else
        let sleeps: Set<Substring> = []
        #endif
        return tasks.contains { task in
            let directory = "/proc/\(pid)/task/\(task)"
            let syscall = (try? String(contentsOfFile: "\(directory)/syscall", encoding: .utf8)) ?? ""
            let wchan = (try? String(contentsOfFile: "\(directory)/wchan", encoding: .utf8)) ?? ""
            return syscall.split(separator: " ").first.map(sleeps.contains) == true || wchan.contains("nanosleep")
        }
    }

    /// Runs a daemon that is expected to refuse to start, to its end: its status and what it
    /// printed on stderr.
    public func runToExit() async throws -> (status: Int32, stderr: String) {
        try launch()
        for _ in 0..<1_000 where process.isRunning {
            try await Task.sleep(for: .milliseconds(10))
        }
        if process.isRunning {
            process.terminate()
            throw SpawnError("\(executable) kept running")
        }
        return (process.terminationStatus, stderr)
    }

    /// Starts a fresh process (a daemon can be started again after it stopped).
    private func launch() throws {
        process = Process()
        stderrPipe = Pipe()
        process.executableURL = try PackageExecutable.url(executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// The daemon's pid (0 before `start`).
    public var processIdentifier: Int32 { process.isRunning ? process.processIdentifier : 0 }

    public var stderr: String {
        String(decoding: stderrPipe.fileHandleForReading.availableData, as: UTF8.self)
    }

    /// Whether a Unix stream socket listens at `path`, as the kernel lists it (/proc/net/unix: the
    /// accepting flag), found without connecting: a probe connection counts against a server's
    /// connection limit until the server notices its end, which on a busy machine came after a
    /// test's own connections (refused 1008 with a limit of 2). A connection made once this holds
    /// waits in the backlog until the server accepts it, as with ``accepts(_:)``.
    public static func listens(_ path: String) -> Bool {
        guard let table = readWhole("/proc/net/unix") else { return accepts(path) }
        return table.split(separator: "\n").dropFirst().contains { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 8, let flags = UInt32(fields[3], radix: 16) else { return false }
            return flags & 0x10000 != 0 && fields[7...].joined(separator: " ") == path
        }
    }

    /// A file read to its end with `read` (a /proc file has no size to go by, and a read by its
    /// size, as `String(contentsOfFile:)` makes, got only its first page).
    static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes += buffer[0..<count]
        }
    }

    /// Whether something accepts connections on the socket.
    public static func accepts(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A program of this package running in the background, its output collected as it comes, for
/// commands that follow changes (`watch`, `log --follow`): a test waits until the program has
/// printed its start, then makes the changes it should see.
public final class RunningProgram: @unchecked Sendable {
    // @unchecked: `Process` and `Pipe` are not Sendable; the output buffer is behind a lock.
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let collected = NSLock()
    private var text = ""
    private var reader: Task<Void, Never>?

    public convenience init(_ name: String, _ arguments: [String]) throws {
        try self.init(path: try PackageExecutable.url(name).path, arguments)
    }

    /// Any program, by its path.
    public init(path: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = output.fileHandleForReading
        let lock = collected
        // A thread of its own, not a task: see `readToEnd`.
        reader = Task {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread { [weak self] in
                    while true {
                        let data = handle.availableData
                        if data.isEmpty { break }
                        lock.withLock { self?.text += String(decoding: data, as: UTF8.self) }
                    }
                    done.resume()
                }
            }
        }
    }

    /// What the program printed so far.
    public var printed: String {
        collected.withLock { text }
    }

    /// Waits until the program has printed at least `count` lines.
    public func waitForLines(_ count: Int, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while printed.filter({ $0 == "\n" }).count < count {
            guard ContinuousClock.now < deadline else {
                throw SpawnError("waited \(timeout) for \(count) line(s) of output; got: \(printed)")
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends the program a signal (SIGINT: Ctrl-C).
    public func signal(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the program to end (killing it after `timeout`) and returns what it printed.
    public func finish(timeout: Duration = .seconds(20)) async throws -> ProgramResult {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline {
                kill(process.processIdentifier, SIGKILL)
                throw SpawnError("still running after \(timeout); printed: \(printed)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await reader?.value
        let stderr = String(decoding: await readToEnd(errors.fileHandleForReading), as: UTF8.self)
        return ProgramResult(status: process.terminationStatus, output: printed, errors: stderr)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
