import Foundation
import ReelDaemon
import ReelTestSupport
import Testing

@Suite(.heavy) struct DataDirectoryLockTests {
    /// Runs `/usr/bin/flock -n FILE true` (a real second holder, in another process) and returns
    /// its exit status: 0 if it got the lock, 1 if the lock is held.
    static func otherProcessCanLock(_ file: String) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        process.arguments = ["-n", file, "true"]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func createsTheDirectoryAndHoldsTheLock() throws {
        let dir = try TemporaryDirectory()
        let data = dir.sub("nested/data")
        let lock = try DataDirectoryLock.acquire(directory: data)
        #expect(lock.path == data + "/reeld.lock")
        var info = stat()
        #expect(stat(data, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o700)
        #expect(stat(lock.path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(try String(contentsOfFile: lock.path, encoding: .utf8) == "\(getpid())\n")
        #expect(lock.isHeld)
        #expect(try !Self.otherProcessCanLock(lock.path))

        lock.release()
        #expect(!lock.isHeld)
        #expect(try Self.otherProcessCanLock(lock.path))
        lock.release()  // twice is fine
    }

    @Test func aSecondHolderIsRefusedWithThePid() throws {
        let dir = try TemporaryDirectory()
        let lock = try DataDirectoryLock.acquire(directory: dir.path)
        // Another open file description, even in this process, conflicts like another daemon.
        let error = #expect(throws: StartupError.self) { try DataDirectoryLock.acquire(directory: dir.path) }
        #expect(error?.code == .alreadyRunning)
        #expect(error?.description == "another reeld (pid \(getpid())) is using \(dir.path); stop it first, or choose another --data-dir")
        #expect(lock.isHeld)
        #expect(try String(contentsOfFile: lock.path, encoding: .utf8) == "\(getpid())\n", "the refused attempt changed nothing")
        lock.release()
        let again = try DataDirectoryLock.acquire(directory: dir.path)
        #expect(again.isHeld)
    }

    @Test func aLockHeldByAnotherProcessRefusesUntilItDies() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.lock")
        // The shell opens the file, has flock(1) lock that open file description, then becomes
        // `sleep` holding it: killing that one process must release the lock.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 9>>\"$0\" && /usr/bin/flock 9 && exec sleep 60", file]
        try holder.run()
        // The shell becomes `sleep` only once flock(1) holds the lock.
        let pid = holder.processIdentifier
        try await waitUntil("the holder to lock the file and become sleep") {
            (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) == "sleep\n"
        }
        #expect(try !Self.otherProcessCanLock(file))

        let error = #expect(throws: StartupError.self) { try DataDirectoryLock.acquire(directory: dir.path) }
        #expect(error?.code == .alreadyRunning)
        #expect(error?.description.hasPrefix("another reeld is using \(dir.path)") == true, "no pid recorded by flock(1)")

        kill(holder.processIdentifier, SIGKILL)  // the kernel releases the lock of a killed process
        holder.waitUntilExit()
        let lock = try DataDirectoryLock.acquire(directory: dir.path)
        #expect(lock.isHeld)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "\(getpid())\n")
    }

    @Test func aFileInsteadOfADirectory() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.sub("file"), contents: Data()))
        let error = #expect(throws: StartupError.self) { try DataDirectoryLock.acquire(directory: dir.sub("file")) }
        #expect(error?.code == .io)
        #expect(error?.description.contains("is not a directory") == true)
    }

    @Test func theDataDirectoryHoldingASharedSocketIsCreatedForTheGroup() async throws {
        let dir = try TemporaryDirectory()
        let gid = UInt32(getegid())
        let configuration = try await DaemonConfiguration.load(
            arguments: ["reeld", "--data-dir", dir.sub("data"), "--socket-group", String(gid)], environment: [:]
        )
        let lock = try DataDirectoryLock.acquire(for: configuration)
        var info = stat()
        #expect(stat(dir.sub("data"), &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o750)
        #expect(info.st_gid == gid)
        lock.release()

        let apart = try await DaemonConfiguration.load(
            arguments: ["reeld", "--data-dir", dir.sub("apart"), "--socket", dir.sub("run/reel.sock"), "--socket-group", String(gid)],
            environment: [:]
        )
        _ = try DataDirectoryLock.acquire(for: apart)
        #expect(stat(dir.sub("apart"), &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o700, "a data directory without the socket stays private")
    }
}
