import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real AF_UNIX stream socket bound at a path, for tests: listening (a live daemon) or closed
/// after listening (the stale socket a killed daemon leaves).
final class TestUnixSocket {
    let path: String
    private(set) var fd: Int32

    init(path: String, listening: Bool = true) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno)!) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { throw POSIXError(.init(rawValue: errno)!) }
        if !listening { close() }
    }

    /// Stops listening; the file stays, as after a crash.
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}

func fileMode(_ path: String) -> UInt32? {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt32(info.st_mode) & 0o7777 : nil
}

func fileGroup(_ path: String) -> UInt32? {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt32(info.st_gid) : nil
}

func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}
