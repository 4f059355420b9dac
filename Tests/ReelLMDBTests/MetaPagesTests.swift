import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

/// LMDB trusts its two meta pages; the environment checks them at open.
@Suite(.heavy) struct MetaPagesTests {
    /// An environment with a few commits, closed; returns its data file's path.
    func written(_ dir: String) throws -> String {
        let env = try LMDBEnvironment(path: dir, options: testOptions())
        let db = try #require(try env.openDatabase("d", create: true))
        for i in 0..<20 {
            try env.write { txn in try txn.put(patternValue(i, count: 3000), forKey: bytes("k\(i)"), in: db) }
        }
        return dir + "/data.mdb"
    }

    /// Flips bit `bit` of the byte at `offset` of a file.
    func flip(_ file: String, offset: UInt64, bit: UInt8) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: [byte ^ (1 << bit)])
    }

    /// Which meta page (0 or 1) holds the larger txnid.
    func newerMetaPage(_ file: String) throws -> UInt64 {
        let handle = try #require(FileHandle(forReadingAtPath: file))
        defer { try? handle.close() }
        let pages = try #require(try handle.read(upToCount: 2 * 4096))
        let txnid = { (page: Int) in
            pages.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: page * 4096 + 16 + 128, as: UInt64.self) }
        }
        return txnid(0) > txnid(1) ? 0 : 1
    }

    func openError(_ dir: String) -> LMDBError? {
        do {
            _ = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
            return nil
        } catch {
            return error
        }
    }

    @Test func intactMetaPagesOpen() throws {
        try withTemporaryDirectory { dir in
            _ = try written(dir)
            #expect(openError(dir) == nil)
        }
    }

    @Test func aDamagedTxnidOfEitherPageIsRefused() throws {
        for page: UInt64 in [0, 1] {
            for bit: UInt8 in [0, 1, 5] {
                try withTemporaryDirectory { dir in
                    let file = try written(dir)
                    // mm_txnid: page header (16) + 128 bytes into MDB_meta; pages are 4096 bytes here.
                    try flip(file, offset: page * 4096 + 16 + 128, bit: bit)
                    let error = openError(dir)
                    #expect(error?.code == .corrupted, "page \(page) bit \(bit): \(String(describing: error))")
                    #expect(error?.detail?.contains("meta pages are damaged") == true)
                }
            }
        }
    }

    /// A high bit of the newer meta page's last page number: in bytes the number wraps round to a
    /// size the file has, and LMDB then answered every transaction with MDB_MAP_RESIZED, which
    /// the environment adopted forever (found by Tools/torture's bit flips).
    @Test func aLastPageWhoseByteOffsetOverflowsIsRefused() throws {
        try withTemporaryDirectory { dir in
            let file = try written(dir)
            let newer = try newerMetaPage(file)
            // mm_last_pg: 120 bytes into MDB_meta; bit 58 times 4096 is 2^70, nothing mod 2^64.
            try flip(file, offset: newer * 4096 + 16 + 120 + 7, bit: 2)
            let error = openError(dir)
            #expect(error?.code == .corrupted)
            #expect(error?.detail?.contains("beyond the end of the file") == true, "\(String(describing: error))")
        }
    }

    /// The same damage arriving after open (the check at open passed): a transaction gives up
    /// with `corrupted` after adopting the recorded map size changed nothing, instead of looping.
    @Test func aTransactionGivesUpWhenAdoptingTheMapSizeChangesNothing() throws {
        try withTemporaryDirectory { dir in
            let file = try written(dir)
            let env = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
            let db = try #require(try env.openDatabase("d"))
            let newer = try newerMetaPage(file)
            try flip(file, offset: newer * 4096 + 16 + 120 + 7, bit: 2)
            do {
                _ = try env.read { txn in try txn.get(bytes("k1"), in: db) }
                Issue.record("a read of a file whose meta page overflows the map succeeded")
            } catch let error as LMDBError {
                #expect(error.code == .corrupted, "\(error)")
            }
        }
    }

    @Test func aFileShorterThanItsMetaPageSaysIsRefused() throws {
        try withTemporaryDirectory { dir in
            let file = try written(dir)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? UInt64)
            #expect(truncate(file, off_t(size / 2 / 4096 * 4096)) == 0)
            let error = openError(dir)
            #expect(error?.code == .corrupted)
            #expect(error?.detail?.contains("beyond the end of the file") == true, "\(String(describing: error))")
        }
    }
}
