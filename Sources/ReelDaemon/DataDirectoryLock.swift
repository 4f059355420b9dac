import Foundation
import ReelStorage
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `<data-dir>/reeld.lock`, so that only one daemon uses a data directory.
///
/// Take it before opening the store and hold it for the daemon's life: at most one process can
/// hold it, and a second `reeld` gets "another reeld (pid N) is using <dir>". The kernel releases
/// the lock when the holder's descriptor closes, which includes the process dying by any signal,
/// so a `kill -9` never leaves a stale lock: whatever the file says, only a live process can hold
/// the lock. The file holds the holder's pid as text, for people and for the message; it is left
/// in place at exit (removing it would let two processes lock two different files of the same
/// name). `flock` locks belong to an open file description: a second ``acquire(directory:directoryMode:directoryGroup:)``
/// in the same process opens the file again and is refused like another process.
///
/// Offline tools (`reel … --data-dir`) open the data directory read-only and do not take this lock.
public final class DataDirectoryLock: Sendable {
    /// The name of the lock file inside the data directory.
    public static let fileName = "reeld.lock"

    /// The data directory.
    public let directory: String
    /// `<directory>/reeld.lock`.
    public let path: String
    private let descriptor: Mutex<Int32?>
    /// What this start made, and ``abandon()`` removes.
    private let createdDirectory: Bool
    private let createdLockFile: Bool

    private init(directory: String, path: String, descriptor: Int32, createdDirectory: Bool, createdLockFile: Bool) {
        self.directory = directory
        self.path = path
        self.descriptor = Mutex(descriptor)
        self.createdDirectory = createdDirectory
        self.createdLockFile = createdLockFile
    }

    /// Creates the data directory if needed and takes the lock.
    ///
    /// - Parameters:
    ///   - directory: the data directory. Created, with missing parents, if it does not exist.
    ///     An existing one must be empty or hold a store: a directory of other files is refused
    ///     before anything is written into it.
    ///   - directoryMode: the mode of the data directory if it is created here (default `0700`).
    ///   - directoryGroup: the group of the data directory if it is created here.
    ///   - allowing: names that may be in an existing directory besides Reel's own files (the
    ///     daemon's socket, when it lives there).
    /// - Throws: ``StartupError`` `.alreadyRunning` when another process holds the lock;
    ///   `.notADataDirectory` for a directory of other files or a path that is not a directory;
    ///   `.io` when the directory or the lock file cannot be created or opened.
    public static func acquire(
        directory: String, directoryMode: UInt32 = 0o700, directoryGroup: UInt32? = nil, allowing: Set<String> = []
    ) throws(StartupError) -> DataDirectoryLock {
        try refuseUnlessReels(directory, allowing: allowing)
        let createdDirectory: Bool
        do {
            createdDirectory = try FileSystemCalls.makeDirectory(directory, mode: directoryMode, group: directoryGroup)
        } catch {
            throw StartupError(.io, "cannot create the data directory \(directory): \(error.reason)", underlying: error)
        }
        let path = directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName
        let createdLockFile = access(path, F_OK) != 0
        let fd = try lockedFile(path, directory: directory)
        let pidText = Array("\(getpid())\n".utf8)
        // Best effort: the pid is for people; the lock itself is what counts.
        if ftruncate(fd, 0) == 0 {
            _ = pidText.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        return DataDirectoryLock(
            directory: directory, path: path, descriptor: fd, createdDirectory: createdDirectory, createdLockFile: createdLockFile
        )
    }

    /// A data directory is new, empty, or a store: `reeld --data-dir ~` must not fill a home
    /// directory with a store's files (nor a typo someone's project).
    private static func refuseUnlessReels(_ directory: String, allowing: Set<String>) throws(StartupError) {
        let kind: DataDirectoryKind
        do {
            kind = try DataDirectory.inspect(directory, allowing: allowing)
        } catch {
            throw StartupError(.io, error.message, underlying: error)
        }
        switch kind {
        case .absent, .empty, .store:
            return
        case .notADirectory:
            throw StartupError(.notADataDirectory, "the data directory \(directory) is not a directory: choose a new or empty directory for --data-dir")
        case .foreign(let entries, let count):
            throw StartupError(
                .notADataDirectory,
                "\(directory) is not a Reel data directory: it holds other files (\(DataDirectory.describe(entries: entries, count: count))) and no data.mdb. "
                    + "Choose a new or empty directory for --data-dir; reeld creates a store only there"
            )
        }
    }

    /// Opens the lock file and locks it. The file may be unlinked by a start that failed (see
    /// ``abandon()``) between the open and the lock: a lock on an unlinked file would exclude no
    /// one, so the file locked must still be the one at `path`, or it is opened again.
    private static func lockedFile(_ path: String, directory: String) throws(StartupError) -> Int32 {
        while true {
            // O_NOFOLLOW: a symlink planted at the lock's name cannot make us truncate another file.
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                let code = errno
                throw StartupError(.io, "cannot open the lock file \(path): \(errnoDescription(code))", underlying: FileSystemCalls.Failure(errno: code))
            }
            var result: Int32
            repeat { result = flock(fd, LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
            if result != 0 {
                let code = errno
                let holder = code == EWOULDBLOCK ? Self.recordedPID(fd) : nil
                close(fd)
                guard code == EWOULDBLOCK else {
                    throw StartupError(.io, "cannot lock \(path): \(errnoDescription(code))", underlying: FileSystemCalls.Failure(errno: code))
                }
                let who = holder.map { "another reeld (pid \($0))" } ?? "another reeld"
                throw StartupError(.alreadyRunning, "\(who) is using \(directory); stop it first, or choose another --data-dir")
            }
            var locked = stat()
            var named = stat()
            if fstat(fd, &locked) == 0, lstat(path, &named) == 0, locked.st_ino == named.st_ino, locked.st_dev == named.st_dev {
                return fd
            }
            close(fd)
        }
    }

    /// Creates the data directory like ``acquire(directory:directoryMode:directoryGroup:)``, with
    /// the mode and group a socket directory gets when the configuration puts the socket straight
    /// in the data directory (the default), so that a socket group can reach it.
    public static func acquire(for configuration: DaemonConfiguration) throws(StartupError) -> DataDirectoryLock {
        let permissions = configuration.socketPermissions
        let holdsSocket = standardized(FileSystemCalls.parentDirectory(of: configuration.socketPath)) == standardized(configuration.dataDirectory)
        return try acquire(
            directory: configuration.dataDirectory,
            directoryMode: holdsSocket ? permissions.directoryMode : 0o700,
            directoryGroup: holdsSocket ? permissions.groupID : nil,
            allowing: holdsSocket ? [URL(fileURLWithPath: configuration.socketPath).lastPathComponent] : []
        )
    }

    /// Whether this object still holds the lock.
    public var isHeld: Bool { descriptor.withLock { $0 != nil } }

    /// Releases the lock (closing the file). Safe to call more than once; also done on deinit.
    public func release() {
        descriptor.withLock { fd in
            guard let held = fd else { return }
            flock(held, LOCK_UN)
            close(held)
            fd = nil
        }
    }

    deinit { release() }

    /// Undoes what this start made, for a start that failed before serving: the lock file if it
    /// was new, and the data directory (with the store opened in it) if it was. An existing
    /// directory keeps everything it had; a new one held no acknowledged action yet.
    public func abandon() {
        descriptor.withLock { fd in
            guard let held = fd else { return }
            if createdDirectory {
                for name in DataDirectory.ownFileNames.union(["data.mdb"]) where name != Self.fileName {
                    unlink(directory + "/" + name)
                }
            }
            // Unlinked while locked: a process that opened it meanwhile sees the name gone once
            // it has the lock, and opens the path again (``lockedFile(_:directory:)``).
            if createdLockFile || createdDirectory { unlink(path) }
            flock(held, LOCK_UN)
            close(held)
            fd = nil
            if createdDirectory { rmdir(directory) }
        }
    }

    private static func recordedPID(_ fd: Int32) -> Int32? {
        guard lseek(fd, 0, SEEK_SET) == 0, let bytes = try? FileSystemCalls.readToEnd(fd, limit: 32) else { return nil }
        return Int32(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Absolute, without `.`, `..` or a trailing `/`, so that two spellings of a path compare equal.
    private static func standardized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
