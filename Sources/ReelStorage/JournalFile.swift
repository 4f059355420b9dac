#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The journal's file, `journal.reel` in the data directory: where a group of dispatches becomes
/// durable with one write and one `fdatasync`, before LMDB receives it (see ``JournalFormat``).
///
/// The file is allocated ahead and written in place, so a sync carries no change of size. At the
/// open, zeros are written ahead (``preallocate(_:)``): a sync into a written block is about 40%
/// cheaper than one that appends or writes into a fallocated block, which ext4 keeps "unwritten"
/// until first written (its sync also writes the inode's extents, `ext4_write_inode` in the
/// profiles). Growth under load allocates with `posix_fallocate`. It starts at ``initialSize``,
/// doubles while its records are not yet in LMDB, up to a cycle size (64 MiB by default); past that, writing goes
/// back to offset 0 once LMDB holds everything in the file.
///
/// The store's writer thread appends; the applier thread grows the file ahead of it
/// (``growAhead(limit:)``), so that an acknowledgement rarely waits for an allocation and its
/// sync. The writer grows it itself only when it finds no room.
final class JournalFile: Sendable {
    static let name = "journal.reel"
    static let initialSize = 1 << 20

    let path: String
    private let fd: Int32
    private let durable: Bool
    /// The allocated, synced size: never more than what is allocated (or written) and synced.
    private let allocated: Atomic<Int>
    /// Where the next record goes. Written by the writer thread only.
    private let next = Atomic<Int>(0)
    /// Held while growing: the writer and the applier never grow at once.
    private let growing = Mutex(())

    var size: Int { allocated.load(ordering: .acquiring) }
    var offset: Int { next.load(ordering: .relaxed) }

    /// Opens the journal of the directory at `directory`, creating it (and syncing the directory
    /// entry) when it does not exist.
    init(directory: String, durable: Bool) throws(StorageError) {
        path = directory + "/" + Self.name
        self.durable = durable
        var created = false
        var fd = open(path, O_RDWR | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            created = fd >= 0
        }
        guard fd >= 0 else { throw Self.error("cannot open the journal \(path)") }
        self.fd = fd
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = Self.error("cannot read the size of \(path)")
            close(fd)
            throw failure
        }
        allocated = Atomic(Int(info.st_size))
        if created && durable {
            let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { if directoryFD >= 0 { close(directoryFD) } }
            guard directoryFD >= 0, fsync(directoryFD) == 0 else {
                let failure = Self.error("cannot sync \(directory) after creating its journal")
                close(fd)
                throw failure
            }
        }
    }

    deinit {
        close(fd)
    }

    /// The whole file, read in one buffer of its size.
    static func contents(ofDirectory directory: String) throws(StorageError) -> [UInt8]? {
        let path = directory + "/" + name
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 && errno == ENOENT { return nil }
        guard fd >= 0 else { throw error("cannot open the journal \(path)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error("cannot read the size of \(path)") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw error("cannot read the journal \(path)") }
            if count == 0 { break }  // (cut short meanwhile: what was read is what there is)
            done += count
        }
        if done < bytes.count { bytes.removeLast(bytes.count - done) }
        return bytes
    }

    /// Whether `count` bytes fit at the current offset.
    func fits(_ count: Int) -> Bool { offset + count <= size }

    /// Grows the file to at least `minimum` bytes, doubling: allocated and synced before it is
    /// used, so that writes into it never change the file's size.
    func grow(toAtLeast minimum: Int) throws(StorageError) {
        try growing.withLock { (_: inout ()) throws(StorageError) in try growLocked(toAtLeast: minimum) }
    }

    /// Writes zeros up to `size` and syncs them. For the open, before any dispatch waits: 64 MiB
    /// take about 45 ms here. Written zeros rather than `posix_fallocate`: ext4 keeps fallocated
    /// blocks "unwritten" until first written, so each sync into one also writes the inode's
    /// extents; a sync into a written block is about 40% cheaper (a 3 KB write and `fdatasync`:
    /// 0.084 against 0.135 ms, the same as appending). Growing under load keeps `fallocate`:
    /// writing zeros there held acknowledgements up for 10–16 ms.
    ///
    /// - Throws: after any failure but a full disk (the disk is failing: the store does not open
    ///   on it). A disk too full for the zeros gets its space back, and the file grows later as
    ///   it needs to.
    func preallocate(_ size: Int) throws(StorageError) {
        try growing.withLock { (_: inout ()) throws(StorageError) in
            let start = self.size
            guard size > start else { return }
            do throws(StorageError) {
                try writeZeros(from: start, to: size)
            } catch where error.code == .full {
                _ = ftruncate(fd, off_t(start))  // (nothing past `start` holds a record)
                return
            }
            guard !durable || fsync(fd) == 0 else { throw Self.error("cannot sync the journal \(path) after writing its space") }
            allocated.store(size, ordering: .releasing)
        }
    }

    /// Doubles the file ahead of the writer, up to `limit`, once the writer is past its middle:
    /// for the applier thread, off the acknowledgement path. A failure is left for the writer to
    /// meet, and report, when it needs the room.
    func growAhead(limit: Int) {
        let size = self.size
        guard size < limit, offset * 2 >= size else { return }
        try? grow(toAtLeast: min(limit, size * 2))
    }

    private func growLocked(toAtLeast minimum: Int) throws(StorageError) {
        let size = self.size
        var target = max(size, Self.initialSize)
        while target < minimum { target *= 2 }
        guard target > size else { return }
        let rc = posix_fallocate(fd, 0, off_t(target))
        if rc != 0 && rc != EOPNOTSUPP && rc != EINVAL {
            errno = rc
            throw Self.error("cannot grow the journal \(path) to \(target) bytes")
        }
        // Without fallocate, zeros allocate the blocks. (With it, they are not written: writing
        // them would spare the first sync into each block the write of the inode's extents, but
        // their sync held acknowledgements up for 10–16 ms at each growth.)
        if rc != 0 { try writeZeros(from: size, to: target) }
        guard !durable || fsync(fd) == 0 else { throw Self.error("cannot sync the journal \(path) after growing it") }
        allocated.store(target, ordering: .releasing)
    }

    /// Writes zeros over `start..<end`: one block of them, written many times over by each
    /// `pwritev` (64 MiB in one call).
    private func writeZeros(from start: Int, to end: Int) throws(StorageError) {
        let block = 64 << 10
        let zeros = UnsafeMutableRawPointer.allocate(byteCount: block, alignment: 4096)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0, count: block)
        var vectors: [iovec] = []
        var position = start
        while position < end {
            vectors.removeAll(keepingCapacity: true)
            var remaining = end - position
            while remaining > 0 && vectors.count < 1024 {  // (IOV_MAX)
                vectors.append(iovec(iov_base: zeros, iov_len: min(block, remaining)))
                remaining -= block
            }
            let count = pwritev(fd, vectors, Int32(vectors.count), off_t(position))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Self.error("cannot write the journal \(path)'s new space") }
            position += count
        }
    }

    /// Starts writing at offset 0 again: only once LMDB durably holds every record in the file.
    func rewind() { next.store(0, ordering: .relaxed) }

    /// Gives the file's space back: only once LMDB durably holds every record in it, at a clean
    /// close, so that a stopped store costs what it holds rather than a cycle of zeros. The next
    /// read-write open writes the zeros ahead again. A cut at any point here loses nothing: every
    /// record left in the file, whole or cut, is one LMDB already holds.
    func release() throws(StorageError) {
        try growing.withLock { (_: inout ()) throws(StorageError) in
            guard ftruncate(fd, 0) == 0 else { throw Self.error("cannot truncate the journal \(path)") }
            guard !durable || fsync(fd) == 0 else { throw Self.error("cannot sync the journal \(path) after truncating it") }
            allocated.store(0, ordering: .releasing)
            next.store(0, ordering: .relaxed)
        }
    }

    /// Writes `record` at the current offset and syncs it; the offset moves past it only on
    /// success. On failure the record's header is overwritten with zeros (best effort), so that a
    /// record whose dispatches were refused is not replayed at the next open.
    func append(_ record: [UInt8]) throws(StorageError) {
        precondition(fits(record.count))
        var failure: StorageError?
        let written = record.withUnsafeBytes { pwriteAll($0, at: offset) }
        if !written {
            failure = Self.error("cannot write to the journal \(path)")
        } else if durable && fdatasync(fd) != 0 {
            failure = Self.error("cannot sync the journal \(path)")
        }
        if let failure {
            let zeros = [UInt8](repeating: 0, count: JournalFormat.headerSize)
            if zeros.withUnsafeBytes({ pwriteAll($0, at: offset) }), durable { _ = fdatasync(fd) }
            throw failure
        }
        next.store(offset + record.count, ordering: .relaxed)
    }

    private func pwriteAll(_ bytes: UnsafeRawBufferPointer, at position: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let count = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(position + done))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            done += count
        }
        return true
    }

    /// A full disk (`ENOSPC`, `EDQUOT`) is `.full`; anything else `.io`.
    static func error(_ what: String) -> StorageError {
        let code = errno
        let full = code == ENOSPC || code == EDQUOT
        return StorageError(full ? .full : .io, "\(what): \(String(cString: strerror(code)))", underlying: JournalIOError(errno: code))
    }
}

/// The `errno` of a failed journal call.
public struct JournalIOError: Error, Sendable, Equatable {
    public var errno: Int32
}
