import Foundation
import ReelDaemon
import Testing

struct SocketPlacementTests {
    @Test func createsAPrivateDirectory() throws {
        let dir = try TemporaryDirectory()
        let placement = SocketPlacement(path: dir.sub("run/reel/reel.sock"), permissions: SocketPermissions())
        #expect(try placement.prepare() == .free)
        #expect(fileMode(dir.sub("run/reel")) == 0o700)
        #expect(placement.directory == dir.sub("run/reel"))
    }

    @Test func createsAGroupDirectoryAndSocket() throws {
        let dir = try TemporaryDirectory()
        let gid = UInt32(getegid())
        let permissions = SocketPermissions(socketMode: 0o660, groupID: gid, groupName: "mine")
        let placement = SocketPlacement(path: dir.sub("run/reel.sock"), permissions: permissions)
        try placement.prepare()
        #expect(fileMode(dir.sub("run")) == 0o750)
        #expect(fileGroup(dir.sub("run")) == gid)

        let socket = try TestUnixSocket(path: placement.path)
        try placement.applySocketPermissions()
        #expect(fileMode(placement.path) == 0o660)
        #expect(fileGroup(placement.path) == gid)
        socket.close()
        placement.removeSocket()
        #expect(!exists(placement.path))
    }

    @Test func aLiveSocketIsNeverUnlinked() throws {
        let dir = try TemporaryDirectory()
        let live = try TestUnixSocket(path: dir.sub("reel.sock"))
        let placement = SocketPlacement(path: live.path, permissions: SocketPermissions())
        let error = #expect(throws: StartupError.self) { try placement.prepare() }
        #expect(error?.code == .socketInUse)
        #expect(error?.description == "socket \(live.path) is in use by a live daemon; stop it first, or choose another --socket")
        #expect(exists(live.path))
        _ = live
    }

    @Test func aStaleSocketIsRemoved() throws {
        let dir = try TemporaryDirectory()
        let stale = try TestUnixSocket(path: dir.sub("reel.sock"), listening: false)
        #expect(exists(stale.path))
        let placement = SocketPlacement(path: stale.path, permissions: SocketPermissions())
        #expect(try placement.prepare() == .removedStaleSocket)
        #expect(!exists(stale.path))
        // And the path can be bound again.
        _ = try TestUnixSocket(path: stale.path)
    }

    @Test func aFileThatIsNotASocketIsRefused() throws {
        let dir = try TemporaryDirectory()
        try "precious".write(toFile: dir.sub("reel.sock"), atomically: true, encoding: .utf8)
        let error = #expect(throws: StartupError.self) {
            try SocketPlacement(path: dir.sub("reel.sock"), permissions: SocketPermissions()).prepare()
        }
        #expect(error?.code == .unsafePermissions)
        #expect(error?.description.contains("exists and is not a socket") == true)
        #expect(try String(contentsOfFile: dir.sub("reel.sock"), encoding: .utf8) == "precious")

        try FileManager.default.createSymbolicLink(atPath: dir.sub("link.sock"), withDestinationPath: dir.sub("reel.sock"))
        #expect(throws: StartupError.self) {
            try SocketPlacement(path: dir.sub("link.sock"), permissions: SocketPermissions()).prepare()
        }
    }

    @Test func aWorldWritableDirectoryIsRefused() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("open"), withIntermediateDirectories: false)
        chmod(dir.sub("open"), 0o1777)
        let error = #expect(throws: StartupError.self) {
            try SocketPlacement(path: dir.sub("open/reel.sock"), permissions: SocketPermissions()).prepare()
        }
        #expect(error?.code == .unsafePermissions)
        #expect(error?.exitStatus == 77)
        #expect(error?.description.contains("is world-writable (mode 1777)") == true)
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give a directory to another user"))
    func aDirectoryOfAnotherUserIsRefused() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("theirs"), withIntermediateDirectories: false)
        try #require(chown(dir.sub("theirs"), 54321, 54321) == 0, "chown: \(String(cString: strerror(errno)))")
        let error = #expect(throws: StartupError.self) {
            try SocketPlacement(path: dir.sub("theirs/reel.sock"), permissions: SocketPermissions()).prepare()
        }
        #expect(error?.code == .unsafePermissions)
        #expect(error?.description.contains("belongs to uid 54321") == true)
    }

    @Test func anExistingDirectoryMustLetTheGroupIn() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.sub("private"), withIntermediateDirectories: false)
        chmod(dir.sub("private"), 0o700)
        let gid = UInt32(getegid())
        let permissions = SocketPermissions(socketMode: 0o660, groupID: gid, groupName: "mine")
        let error = #expect(throws: StartupError.self) {
            try SocketPlacement(path: dir.sub("private/reel.sock"), permissions: permissions).prepare()
        }
        #expect(error?.code == .unsafePermissions)
        #expect(error?.description.contains("does not let group mine reach the socket") == true)
        #expect(fileMode(dir.sub("private")) == 0o700, "an existing directory is never changed")

        chmod(dir.sub("private"), 0o750)
        chown(dir.sub("private"), uid_t.max, gid_t(gid))
        #expect(try SocketPlacement(path: dir.sub("private/reel.sock"), permissions: permissions).prepare() == .free)
    }

    @Test func anExistingPrivateDirectoryIsAccepted() throws {
        let dir = try TemporaryDirectory()
        chmod(dir.path, 0o755)
        #expect(try SocketPlacement(path: dir.sub("reel.sock"), permissions: SocketPermissions()).prepare() == .free)
        #expect(fileMode(dir.path) == 0o755, "not tightened behind the operator's back")
    }

    @Test func removeSocketLeavesASocketItDidNotBind() throws {
        let dir = try TemporaryDirectory()
        let placement = SocketPlacement(path: dir.sub("reel.sock"), permissions: SocketPermissions())
        try placement.prepare()
        let first = try TestUnixSocket(path: placement.path)
        try placement.applySocketPermissions()
        #expect(fileMode(placement.path) == 0o600)
        first.close()
        rename(placement.path, dir.sub("moved.sock"))  // keeps the first inode alive, so the next cannot reuse it
        let other = try TestUnixSocket(path: placement.path)  // someone else's socket, a new inode
        placement.removeSocket()
        #expect(exists(other.path))
    }
}
