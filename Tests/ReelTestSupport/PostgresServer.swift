import Foundation

/// A real PostgreSQL server in a temporary directory, for the tests of the shared log: its own
/// cluster (`initdb`), on a free TCP port of 127.0.0.1 and a Unix socket in the same directory,
/// trusting every local connection as user `reel`. It can be stopped and started again on the
/// same port and data (an outage), or frozen (a hung server), and is always stopped and removed
/// in the end: by ``shutdown()``, by `deinit`, or at the process's exit for ``shared()``.
///
/// PostgreSQL refuses to run as root; as root, its programs run as the `postgres` user (which
/// Debian's package creates) or else `nobody`, through `setpriv`, and the directory is theirs.
/// Not installed is a failure, not a skip: `Tools/bootstrap --test` installs it.
public final class PostgresServer: @unchecked Sendable {
    // @unchecked: the mutable state (`removed`, `databaseCount`) is behind `lock`.
    public enum StopMode: String, Sendable {
        /// Waits for the clients to disconnect.
        case smart
        /// Disconnects the clients, rolls back their transactions and shuts down cleanly.
        case fast
        /// Kills every server process at once, as a crash would (recovery at the next start).
        case immediate
    }

    /// The directory holding the cluster (`data`), the socket and the server's log (`server.log`).
    public let directory: String
    public let port: Int
    /// The user every connection authenticates as (trusted, no password).
    public let user = "reel"
    /// The PostgreSQL programs (`initdb`, `pg_ctl`, `postgres`, `createdb`, `psql`) are here.
    public let binDirectory: String
    /// Who runs the server: `nil` for this process's own user, else (as root) an unprivileged one.
    private let runAs: (name: String, uid: uid_t, gid: gid_t)?
    private let lock = NSLock()
    private var removed = false
    private var databaseCount = 0

    /// The `postgres` database over TCP: `postgres://reel@127.0.0.1:PORT/postgres`.
    public var url: String { url(database: "postgres") }

    public func url(database: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(database)" }

    /// The directory holding the Unix socket `.s.PGSQL.<port>` (libpq's `host=` for a socket).
    public var socketDirectory: String { directory }

    private var dataDirectory: String { directory + "/data" }
    public var logPath: String { directory + "/server.log" }

    /// Creates a cluster in a fresh temporary directory and starts it on a free port.
    public static func launch() async throws -> PostgresServer {
        let server = try await PostgresServer()
        do {
            try await server.start()
        } catch {
            server.shutdown()
            throw error
        }
        return server
    }

    /// One server for every test of the process that can share it (each in a database of its
    /// own, see ``createDatabase(_:)``), started by the first test that asks and stopped when the
    /// process exits. Tests that stop or freeze the server start one of their own instead.
    public static func shared() async throws -> PostgresServer {
        try await SharedServer.instance.get()
    }

    private init() async throws {
        binDirectory = try Self.findBinDirectory()
        runAs = try Self.unprivilegedUser()
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("reel-postgres-\(UUID().uuidString.prefix(8))", isDirectory: true)
        // Short: the socket path `<dir>/.s.PGSQL.<port>` must fit in sun_path (108 bytes).
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        directory = url.path
        port = try Self.freePort()
        if let runAs {
            guard chown(directory, runAs.uid, runAs.gid) == 0 else {
                throw SpawnError("cannot give \(directory) to \(runAs.name): \(String(cString: strerror(errno)))")
            }
        }
        let initdb = try await run(
            "initdb", ["-D", dataDirectory, "-A", "trust", "-U", user, "--no-sync", "--no-locale", "-E", "UTF8"]
        )
        guard initdb.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw SpawnError("initdb failed (status \(initdb.status)): \(initdb.output)")
        }
    }

    /// Starts the server (again: same port, same data) and waits until it accepts connections.
    public func start() async throws {
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200"
        let result = try await run("pg_ctl", ["-w", "-t", "30", "-D", dataDirectory, "-l", logPath, "-o", options, "start"])
        guard result.status == 0 else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw SpawnError("pg_ctl start failed (status \(result.status)): \(result.output)\n\(log.suffix(2_000))")
        }
    }

    /// Stops the server; `immediate` is a crash as far as clients and the data are concerned.
    public func stop(mode: StopMode = .fast) async throws {
        let result = try await run("pg_ctl", ["-w", "-t", "30", "-D", dataDirectory, "-m", mode.rawValue, "stop"])
        guard result.status == 0 else {
            throw SpawnError("pg_ctl stop -m \(mode.rawValue) failed (status \(result.status)): \(result.output)")
        }
    }

    /// Stops every process of the server (SIGSTOP) without closing anything: connections stay
    /// open and new ones are accepted by the kernel, but nothing answers — a hung server.
    public func freeze() throws { try signalAll(SIGSTOP) }

    /// Lets a frozen server go on.
    public func thaw() throws { try signalAll(SIGCONT) }

    /// Creates a database (a fresh one per test on a shared server) and returns its URL.
    /// `name` is prefixed to a counter, so the same name may be asked for twice.
    public func createDatabase(_ name: String) async throws -> String {
        let cleaned = String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }.prefix(40))
        let database = lock.withLock {
            databaseCount += 1
            return "\(cleaned)_\(databaseCount)"
        }
        // A client program: no need to run it as the server's user.
        let result = try await run("createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", user, database], asServerUser: false)
        guard result.status == 0 else {
            throw SpawnError("createdb \(database) failed (status \(result.status)): \(result.output)")
        }
        return url(database: database)
    }

    /// Runs SQL with `psql` in the database of `url` (one made by ``createDatabase(_:)``) and
    /// returns its rows, unaligned (`|` between columns), one a line.
    @discardableResult
    public func execute(_ sql: String, in url: String) async throws -> String {
        guard let database = URL(string: url)?.lastPathComponent, !database.isEmpty else {
            throw SpawnError("no database in \(url)")
        }
        let result = try await run(
            "psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", user, "-d", database, "-c", sql],
            asServerUser: false
        )
        guard result.status == 0 else { throw SpawnError("psql failed (status \(result.status)) on \(sql): \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server at once (if running) and removes its directory. Safe to call again.
    public func shutdown() {
        let alreadyRemoved: Bool = lock.withLock {
            defer { removed = true }
            return removed
        }
        guard !alreadyRemoved else { return }
        // Whatever this object believes: a start that failed half-way may have left a server.
        if FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") {
            // Synchronous on purpose: it also runs from deinit and at exit. A frozen server
            // would not stop (SIGCONT first), and pg_ctl waits for the processes to end.
            try? signalAll(SIGCONT)
            let (executable, arguments) = commandLine(["pg_ctl", "-w", "-t", "20", "-D", dataDirectory, "-m", "immediate", "stop"])
            _ = Self.spawnAndWait(executable, arguments)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { shutdown() }

    // MARK: - Processes

    /// Runs one of PostgreSQL's programs to its end (as the server's user, for the server's
    /// programs), on a thread of its own. Its output and errors come together in `output`.
    private func run(_ program: String, _ arguments: [String], asServerUser: Bool = true) async throws -> (status: Int32, output: String) {
        let (executable, fullArguments) = asServerUser ? commandLine([program] + arguments) : (binDirectory + "/" + program, arguments)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.spawnAndWait(executable, fullArguments)) }
        }
    }

    /// Runs a program to its end, blocking, with posix_spawn and waitpid rather than Foundation's
    /// `Process`: `pg_ctl start` leaves a daemon behind, and on Linux `Process` learns that its
    /// child ended only when a socket it hands the child is closed — which the daemon, inheriting
    /// it, never does. Likewise a daemon inheriting another test's pipe would keep that test from
    /// ever reading its end. So the child gets /dev/null as stdin, a file as stdout and stderr,
    /// and no other descriptor of this process.
    static func spawnAndWait(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("reel-pg-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        closeInheritedDescriptors(&actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { return (-1, "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let signal = status & 0x7f
        return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, output)
    }

    /// Adds a close of every descriptor from 3 up: glibc's `posix_spawn_file_actions_addclosefrom_np`
    /// (not visible to Swift, hence dlsym), else each descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            if unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 { return }
        }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let descriptor = Int32(entry), descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
    }

    /// The program's path and arguments, through `setpriv` when this process is root.
    private func commandLine(_ command: [String]) -> (String, [String]) {
        let program = binDirectory + "/" + command[0]
        guard let runAs else { return (program, Array(command.dropFirst())) }
        return (
            Self.setpriv,
            ["--reuid=\(runAs.uid)", "--regid=\(runAs.gid)", "--clear-groups", program] + command.dropFirst()
        )
    }

    /// Sends `signal` to the postmaster and each of its children (the backends and workers).
    private func signalAll(_ signal: Int32) throws {
        guard let pidFile = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
            let first = pidFile.split(separator: "\n").first, let postmaster = pid_t(first)
        else { throw SpawnError("the server is not running (no postmaster.pid in \(dataDirectory))") }
        var pids = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8)
            else { continue }
            // "pid (comm) state ppid …": the fields after the command's closing parenthesis.
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            if fields.count > 1, pid_t(fields[1]) == postmaster { pids.append(pid) }
        }
        // Children first when stopping, so none is left running by a postmaster that noticed.
        for pid in signal == SIGSTOP ? pids.reversed() : pids { kill(pid, signal) }
    }

    // MARK: - Finding things

    static let setpriv = "/usr/bin/setpriv"

    /// Where `initdb` and `pg_ctl` are: on PATH, else Debian's /usr/lib/postgresql/<version>/bin
    /// (the newest version), which is not on PATH.
    static func findBinDirectory() throws -> String {
        let fileManager = FileManager.default
        func hasAll(_ directory: String) -> Bool {
            ["initdb", "pg_ctl", "postgres", "createdb", "psql"].allSatisfy { fileManager.isExecutableFile(atPath: directory + "/" + $0) }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) where hasAll(directory) {
            // A symbolic link (such as /usr/local/bin/initdb) stands for the real installation.
            let initdb = URL(fileURLWithPath: directory + "/initdb").resolvingSymlinksInPath()
            let real = initdb.deletingLastPathComponent().path
            return hasAll(real) ? real : directory
        }
        let versions = (try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let directory = "/usr/lib/postgresql/\(version)/bin"
            if hasAll(directory) { return directory }
        }
        throw SpawnError("""
            PostgreSQL is not installed: no initdb, pg_ctl, postgres, createdb and psql on PATH or in \
            /usr/lib/postgresql/*/bin. Run Tools/bootstrap --test (it installs Debian's postgresql package).
            """)
    }

    /// As root: the user to run the server as (`postgres`, else `nobody`); nil otherwise.
    static func unprivilegedUser() throws -> (name: String, uid: uid_t, gid: gid_t)? {
        guard geteuid() == 0 else { return nil }
        guard FileManager.default.isExecutableFile(atPath: setpriv) else {
            throw SpawnError("running as root, PostgreSQL must run as another user, but \(setpriv) is missing")
        }
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name) { return (name, entry.pointee.pw_uid, entry.pointee.pw_gid) }
        }
        throw SpawnError("running as root, PostgreSQL must run as another user, but there is no postgres or nobody user")
    }

    /// A TCP port of 127.0.0.1 free right now (the kernel's pick).
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SpawnError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw SpawnError("cannot find a free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The process-wide server of ``PostgresServer/shared()``: started once (concurrent first callers
/// wait for the same start), stopped and removed by an exit handler.
private actor SharedServer {
    static let instance = SharedServer()
    private var starting: Task<PostgresServer, any Error>?

    func get() async throws -> PostgresServer {
        if let starting { return try await starting.value }
        let task = Task(executorPreference: TestThreads.shared) { () async throws -> PostgresServer in
            let server = try await PostgresServer.launch()
            SharedServerExit.register(server)
            return server
        }
        starting = task
        return try await task.value
    }
}

/// Stops the shared server when the test process exits normally (static objects are never
/// deinitialised).
private enum SharedServerExit {
    nonisolated(unsafe) static var server: PostgresServer?
    static let lock = NSLock()

    static func register(_ server: PostgresServer) {
        lock.withLock { self.server = server }
        atexit {
            let server = SharedServerExit.lock.withLock { SharedServerExit.server }
            server?.shutdown()
        }
    }
}
