import Foundation
import ReelLMDB
import Testing

/// LMDB trusts its two meta pages; the environment checks them at open.
struct MetaPagesTests {
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
