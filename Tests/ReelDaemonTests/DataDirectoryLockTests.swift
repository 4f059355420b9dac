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
        #expect(error?.code == .notADataDirectory)
        #expect(error?.description.contains("is not a directory") == true)
    }

    /// `reeld --data-dir ~`: a directory of someone's files gets no store, and nothing written.
    @Test func aDirectoryOfOtherFilesIsRefusedUntouched() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("home/photos"), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir.sub("home/notes.txt"), contents: Data("x".utf8)))
        let error = #expect(throws: StartupError.self) { try DataDirectoryLock.acquire(directory: dir.sub("home")) }
        #expect(error?.code == .notADataDirectory)
        #expect(error?.code.exitStatus == 78)
        #expect(error?.description.hasPrefix("\(dir.sub("home")) is not a Reel data directory: it holds other files (notes.txt, photos) and no data.mdb") == true, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.sub("home")).sorted() == ["notes.txt", "photos"])
    }

    /// What Reel itself leaves in a directory (a lock, a socket, an empty journal) does not make
    /// it foreign, and a store is a store whatever else is beside it.
    @Test func reelsOwnFilesAndStoresAreTaken() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("left"), withIntermediateDirectories: true)
        for name in ["reeld.lock", "journal.reel", "reeld.sock"] {
            #expect(FileManager.default.createFile(atPath: dir.sub("left/\(name)"), contents: Data()))
        }
        #expect(throws: StartupError.self) { try DataDirectoryLock.acquire(directory: dir.sub("left")) }  // the socket's name is not allowed here
        try DataDirectoryLock.acquire(directory: dir.sub("left"), allowing: ["reeld.sock"]).release()
        try FileManager.default.createDirectory(atPath: dir.sub("store"), withIntermediateDirectories: true)
        for name in ["data.mdb", "README"] {
            #expect(FileManager.default.createFile(atPath: dir.sub("store/\(name)"), contents: Data()))
        }
        try DataDirectoryLock.acquire(directory: dir.sub("store")).release()
    }

    /// A start refused after the lock leaves the directory as it was: a new one goes away with
    /// everything made in it, an existing one loses only the lock file it did not have.
    @Test func abandoningRemovesWhatTheStartMade() throws {
        let dir = try TemporaryDirectory()
        let fresh = try DataDirectoryLock.acquire(directory: dir.sub("new/data"))
        #expect(FileManager.default.createFile(atPath: dir.sub("new/data/data.mdb"), contents: Data("store".utf8)))
        fresh.abandon()
        #expect(!FileManager.default.fileExists(atPath: dir.sub("new/data")))
        #expect(!fresh.isHeld)

        try FileManager.default.createDirectory(atPath: dir.sub("existing"), withIntermediateDirectories: true)
        let existing = try DataDirectoryLock.acquire(directory: dir.sub("existing"))
        existing.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.sub("existing")).isEmpty)

        #expect(FileManager.default.createFile(atPath: dir.sub("existing/reeld.lock"), contents: Data()))
        try DataDirectoryLock.acquire(directory: dir.sub("existing")).abandon()
        #expect(FileManager.default.fileExists(atPath: dir.sub("existing/reeld.lock")), "a lock file it found is kept")
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
