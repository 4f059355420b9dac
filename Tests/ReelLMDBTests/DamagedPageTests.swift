import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

/// Pages LMDB follows without checking them: a read that meets a damaged one ends in an error, not
/// in a signal or an abort.
@Suite(.heavy) struct DamagedPageTests {
    /// One write transaction of enough keys for a tree of leaves under one branch page; returns
    /// the data file's path and its page size.
    func written(_ dir: String) throws -> (file: String, pageSize: Int) {
        let env = try LMDBEnvironment(path: dir, options: testOptions())
        let db = try #require(try env.openDatabase("d", create: true))
        try env.write { txn in
            for i in 0..<400 { try txn.put(patternValue(i, count: 100), forKey: bytes(String(format: "k%04d", i)), in: db) }
        }
        return (dir + "/data.mdb", 4096)
    }

    /// Found by the bit-flip test: a damaged child page number in a branch page sent a cursor to a
    /// page that is not a leaf, and LMDB's assertion `IS_LEAF(mp)` in `mdb_cursor_next` aborted
    /// the process (SIGABRT). The assertion now abandons the read like a memory fault does.
    @Test func aBranchPointingAtABranchIsCorruptionNotAnAbort() throws {
        try withTemporaryDirectory { dir in
            let (file, pageSize) = try written(dir)
            var data = try Data(contentsOf: URL(fileURLWithPath: file))
            // Find the one branch page (flags at offset 10: P_BRANCH = 0x01) and point its second
            // child at itself.
            let pages = data.count / pageSize
            var branch: Int?
            for page in 2..<pages where data[page * pageSize + 10] == 0x01 && data[page * pageSize + 11] == 0 {
                branch = page
            }
            let page = try #require(branch, "no branch page: the tree has one level")
            let base = page * pageSize
            let pgno = UInt64(data[base]) | UInt64(data[base + 1]) << 8 | UInt64(data[base + 2]) << 16
            let node = Int(data[base + 18]) | Int(data[base + 19]) << 8  // mp_ptrs[1]
            // A branch node keeps its child's page number in mn_lo, mn_hi and mn_flags.
            let child = base + node
            data[child] = UInt8(pgno & 0xff)
            data[child + 1] = UInt8(pgno >> 8 & 0xff)
            data[child + 2] = UInt8(pgno >> 16 & 0xff)
            data[child + 3] = 0
            data[child + 4] = 0
            data[child + 5] = 0
            try data.write(to: URL(fileURLWithPath: file))

            let env = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
            let db = try #require(try env.openDatabase("d"))
            var seen = 0
            do {
                try env.read { txn in
                    try txn.forEach(in: db) { _, _ in
                        seen += 1
                        return true
                    }
                }
                Issue.record("a walk through a branch that points at a branch went on (\(seen) keys)")
            } catch let error as LMDBError {
                #expect(error.code == .corrupted, "\(error)")
                #expect(seen < 400)
            }
        }
    }
}
