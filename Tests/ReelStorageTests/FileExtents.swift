#if canImport(Glibc)
import Glibc
#endif

/// How a file's blocks are allocated, as the kernel's FIEMAP reports them: to tell blocks that
/// were written from blocks only allocated (`posix_fallocate`), which ext4 and XFS keep
/// "unwritten" until first written.
enum FileExtents {
    /// The bytes of `path` in extents marked unwritten, or `nil` when the file system cannot say
    /// (no FIEMAP).
    static func unwrittenBytes(of path: String) -> Int? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let headerSize = 32, extentSize = 56, capacity = 512
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: headerSize + extentSize * capacity, alignment: 8)
        defer { buffer.deallocate() }
        var total = 0
        var start: UInt64 = 0
        while true {
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: headerSize + extentSize * capacity)
            buffer.storeBytes(of: start, toByteOffset: 0, as: UInt64.self)  // fm_start
            buffer.storeBytes(of: UInt64.max - start, toByteOffset: 8, as: UInt64.self)  // fm_length
            buffer.storeBytes(of: UInt32(1), toByteOffset: 16, as: UInt32.self)  // fm_flags: FIEMAP_FLAG_SYNC
            buffer.storeBytes(of: UInt32(capacity), toByteOffset: 24, as: UInt32.self)  // fm_extent_count
            guard ioctl(fd, UInt(0xC020_660B), buffer) == 0 else { return nil }  // FS_IOC_FIEMAP
            let mapped = Int(buffer.load(fromByteOffset: 20, as: UInt32.self))
            guard mapped > 0 else { return total }
            for index in 0..<mapped {
                let extent = buffer + headerSize + index * extentSize
                let logical = extent.load(fromByteOffset: 0, as: UInt64.self)
                let length = extent.load(fromByteOffset: 16, as: UInt64.self)
                let flags = extent.load(fromByteOffset: 40, as: UInt32.self)
                if flags & 0x800 != 0 { total += Int(length) }  // FIEMAP_EXTENT_UNWRITTEN
                if flags & 0x1 != 0 { return total }  // FIEMAP_EXTENT_LAST
                start = logical + length
            }
        }
    }

    /// Whether the file system keeps allocated blocks unwritten until first written (ext4, XFS
    /// do; tmpfs has no such state), and FIEMAP says so: tried on a file allocated at `probe`.
    static func keepsAllocatedBlocksUnwritten(probe: String) -> Bool {
        let fd = open(probe, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { unlink(probe) }
        let allocated = posix_fallocate(fd, 0, 64 << 10) == 0
        close(fd)
        return allocated && (unwrittenBytes(of: probe) ?? 0) > 0
    }
}
