import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

@Suite(.heavy) struct LMDBEnvironmentTests {
    @Test func openCreatesMissingDirectoriesAndReportsInfo() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/nested/data"
            let env = try LMDBEnvironment(path: path, options: testOptions(mapSize: 1 << 20))
            #expect(FileManager.default.fileExists(atPath: path + "/data.mdb"))
            #expect(FileManager.default.fileExists(atPath: path + "/lock.mdb"))
            #expect(env.staleReadersCleared == 0)
            #expect(env.mapSize == 1 << 20)
            #expect(env.maxKeySize >= 511)
            let db = try #require(try env.openDatabase("kv", create: true))
            let before = env.info.lastTransactionID
            try env.write { txn in try txn.put(bytes("v"), forKey: 1, in: db) }
            let info = env.info
            #expect(info.lastTransactionID == before + 1)
            #expect(info.mapSize == 1 << 20)
            #expect(info.maxReaders == 126)
            #expect(info.lastPageNumber > 1)
        }
    }

    @Test func theSameEnvironmentCannotBeOpenedTwiceInOneProcess() throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir + "/env", options: testOptions())
            // Another spelling of the same directory is the same environment.
            let error = #expect(throws: LMDBError.self) {
                try LMDBEnvironment(path: dir + "/./env/", options: testOptions(readOnly: true))
            }
            #expect(error?.code == .busy)
            withExtendedLifetime(env) {}
            // Once the first instance is gone, opening again works.
        }
        try withTemporaryDirectory { dir in
            _ = try LMDBEnvironment(path: dir, options: testOptions())
            _ = try LMDBEnvironment(path: dir, options: testOptions())
        }
    }

    @Test func readOnlyOpenNeedsAnExistingEnvironmentAndRefusesWrites() throws {
        try withTemporaryDirectory { dir in
            let missing = #expect(throws: LMDBError.self) {
                try LMDBEnvironment(path: dir + "/absent", options: testOptions(readOnly: true))
            }
            #expect(missing?.code == .noSuchFile)
            #expect(!FileManager.default.fileExists(atPath: dir + "/absent"))

            do {
                let writer = try LMDBEnvironment(path: dir, options: testOptions())
                let db = try #require(try writer.openDatabase("kv", create: true))
                try writer.write { txn in try txn.put(bytes("v"), forKey: 1, in: db) }
            }
            let reader = try LMDBEnvironment(path: dir, options: testOptions(readOnly: true))
            let db = try #require(try reader.openDatabase("kv"))
            #expect(try reader.read { try $0.get(1, in: db) } == bytes("v"))
            let write = #expect(throws: LMDBError.self) {
                try reader.write { txn in try txn.put(bytes("w"), forKey: 2, in: db) }
            }
            #expect(write?.code == .accessDenied)
            let create = #expect(throws: LMDBError.self) { try reader.openDatabase("other", create: true) }
            #expect(create?.code == .accessDenied)
        }
    }

    @Test func aFileThatIsNotLMDBIsInvalid() throws {
        try withTemporaryDirectory { dir in
            try Data(repeating: 0xAB, count: 64 << 10).write(to: URL(fileURLWithPath: dir + "/data.mdb"))
            let error = #expect(throws: LMDBError.self) { try LMDBEnvironment(path: dir, options: testOptions()) }
            #expect(error?.code == .invalid)
            #expect(error?.operation == "mdb_env_open")
            // The failed open did not leave the directory registered as open.
            try FileManager.default.removeItem(atPath: dir + "/data.mdb")
            _ = try LMDBEnvironment(path: dir, options: testOptions())
        }
    }

    @Test(arguments: [false, true])
    func copyMakesAConsistentBackupThatOpensOnItsOwn(compact: Bool) throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir + "/live", options: testOptions())
            let log = try #require(try env.openDatabase("log", create: true))
            try env.write { txn in
                for seq: UInt64 in 1...5_000 { try txn.put(patternValue(Int(seq), count: 100), forKey: seq, in: log, append: true) }
            }
            try env.write { txn in
                for seq: UInt64 in 1...2_500 { try txn.delete(seq, in: log) }  // leaves free pages behind
            }
            try env.copy(to: dir + "/backup", compact: compact)
            // The copy must not overwrite an existing one.
            let again = #expect(throws: LMDBError.self) { try env.copy(to: dir + "/backup", compact: compact) }
            #expect(again?.code == .fileExists)

            let backup = try LMDBEnvironment(path: dir + "/backup", options: testOptions(readOnly: true))
            let copied = try #require(try backup.openDatabase("log"))
            try backup.read { txn throws in
                #expect(try txn.count(in: copied) == 2_500)
                #expect(try txn.get(5_000, in: copied) == patternValue(5_000, count: 100))
                #expect(try txn.get(1, in: copied) == nil)
            }
            let live = try FileManager.default.attributesOfItem(atPath: dir + "/live/data.mdb")[.size] as? Int ?? 0
            let copy = try FileManager.default.attributesOfItem(atPath: dir + "/backup/data.mdb")[.size] as? Int ?? 0
            if compact { #expect(copy < live) } else { #expect(copy == live) }
        }
    }

    @Test func errorsNameTheirCodeAndOperation() {
        let error = LMDBError(code: .mapFull, operation: "mdb_txn_commit", detail: "the map is full")
        #expect(error.code.rawValue == -30792)
        #expect(error.code.isLMDBCode)
        #expect(!LMDBError.Code.noSpace.isLMDBCode)
        #expect(error.message.contains("mapsize"))
        #expect(error.description == "mdb_txn_commit: MDB_MAP_FULL (-30792): \(error.message); the map is full")
        #expect(LMDBError.Code(rawValue: ENOSPC) == .noSpace)
        #expect(LMDBError(code: .noSpace, operation: "write").message.lowercased().contains("space"))
        #expect("\(LMDBError.Code(rawValue: 12345))" == "code 12345")
    }
}
