#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CReelLMDB

/// LMDB's two meta pages, as LMDB 0.9 lays them out on a 64-bit machine: a 16-byte page header,
/// then `MDB_meta` (magic, version, address, map size, the free and main databases' records,
/// last page, txnid).
///
/// LMDB picks the meta page with the larger txnid and trusts it. Its pages carry no checksum, so
/// a damaged txnid can make it pick the older page and serve the previous transaction as if it
/// were the latest (an acknowledged commit silently gone), and a damaged last-page number can make
/// a writer overwrite live pages. Transaction N writes meta page N % 2, so two intact pages hold
/// consecutive txnids of the right parity, and the newer's last page is at least the older's:
/// checking that at open turns such damage into an error.
struct MetaPages {
    struct Meta {
        var txnid: UInt64
        var lastPage: UInt64
        var mainRoot: UInt64
    }

    static let headerSize = 16
    static let magic: UInt32 = 0xBEEF_C0DE

    /// Reads and checks both meta pages of the open environment's data file.
    /// - Throws: ``LMDBError`` `corrupted` naming what does not hold.
    static func check(_ env: OpaquePointer) throws(LMDBError) {
        var fd: Int32 = -1
        var stat = MDB_stat()
        guard mdb_env_get_fd(env, &fd) == MDB_SUCCESS, mdb_env_stat(env, &stat) == MDB_SUCCESS else { return }
        let pageSize = Int(stat.ms_psize)
        // A writer in another process may rewrite a meta page while we read: a read that finds
        // the pages inconsistent is tried again before it counts.
        var problem = ""
        for _ in 0..<3 {
            var bytes = [UInt8](repeating: 0, count: 2 * pageSize)
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 2 * pageSize, 0) }
            guard read == 2 * pageSize else { return }  // a file this short is LMDB's own error
            var info = Glibc.stat()
            let fileSize = fstat(fd, &info) == 0 ? UInt64(info.st_size) : .max
            guard let found = bytes.withUnsafeBytes({ inconsistency($0, pageSize: pageSize, fileSize: fileSize) }) else { return }
            problem = found
        }
        throw LMDBError(code: .corrupted, operation: "mdb_env_open", detail: "the data file's meta pages are damaged: \(problem)")
    }

    /// What is wrong with the two meta pages in `bytes`, or `nil` when they agree.
    static func inconsistency(_ bytes: UnsafeRawBufferPointer, pageSize: Int, fileSize: UInt64) -> String? {
        func field<T: FixedWidthInteger>(_ page: Int, _ offset: Int, _: T.Type) -> T {
            bytes.loadUnaligned(fromByteOffset: page * pageSize + headerSize + offset, as: T.self)
        }
        var metas: [Meta] = []
        for page in 0..<2 {
            guard field(page, 0, UInt32.self) == magic else { return "meta page \(page) has no LMDB magic" }
            metas.append(Meta(txnid: field(page, 128, UInt64.self), lastPage: field(page, 120, UInt64.self), mainRoot: field(page, 112, UInt64.self)))
        }
        for (page, meta) in metas.enumerated() where meta.txnid != 0 && meta.txnid % 2 != UInt64(page) {
            return "meta page \(page) holds txnid \(meta.txnid), which belongs on page \(meta.txnid % 2)"
        }
        let (older, newer) = metas[0].txnid < metas[1].txnid ? (metas[0], metas[1]) : (metas[1], metas[0])
        if newer.txnid != 0 && newer.txnid - older.txnid != 1 {
            return "their txnids \(older.txnid) and \(newer.txnid) are not consecutive"
        }
        if newer.lastPage < older.lastPage {
            return "the newer one ends the file at page \(newer.lastPage), before the older one's \(older.lastPage)"
        }
        // In pages, not bytes: a damaged high bit would overflow the product and wrap it back
        // to a plausible size, as it also does inside LMDB's own rounding of the map size.
        if newer.lastPage >= fileSize / UInt64(pageSize) {
            return "the newer one names page \(newer.lastPage), beyond the end of the file"
        }
        if newer.mainRoot != .max && newer.mainRoot > newer.lastPage {
            return "the main database's root page \(newer.mainRoot) is beyond the last page \(newer.lastPage)"
        }
        return nil
    }
}
