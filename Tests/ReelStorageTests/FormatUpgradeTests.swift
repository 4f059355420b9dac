import Foundation
import ReelCore
import ReelJSON
import ReelLMDB
@testable import ReelStorage
import ReelTestSupport
import Testing

/// A directory written by storage format 1 (no checksums), made by the previous release's reeld:
/// `Fixtures/format1` holds its data file and what `reel export` printed from it then.
@Suite(.heavy) struct FormatUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/format1")

    /// The fixture's data file in a fresh directory.
    func copyOfFixture(_ dir: borrowing TemporaryDirectory) throws -> String {
        let path = dir.sub("data")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("data.mdb").path, toPath: path + "/data.mdb")
        return path
    }

    /// Every action, as (seq, type, payload), from the export the old release printed.
    func exported() throws -> [(UInt64, String, JSONValue)] {
        let text = try String(contentsOf: Self.fixture.appendingPathComponent("export.ndjson"), encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let json = try JSONValue(parsing: String(line))
            return (UInt64(json["seq"]!.intValue!), json["type"]!.stringValue!, json["payload"] ?? .null)
        }
    }

    func actions(_ data: DataDirectory) throws -> [(UInt64, String, JSONValue)] {
        var all: [(UInt64, String, JSONValue)] = []
        try data.forEachEnvelope(from: 1) { all.append(($0.seq, $0.action.type, $0.action.payload)); return true }
        return all
    }

    @Test func aFormat1DirectoryIsReadAsItIsWhenOpenedReadOnly() throws {
        let dir = try TemporaryDirectory()
        let path = try copyOfFixture(dir)
        let data = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        #expect(data.metadata.formatVersion == "1")
        #expect(data.acceptsLegacyRecords)
        let expected = try exported()
        let found = try actions(data)
        #expect(found.map(\.0) == expected.map(\.0))
        #expect(found.map(\.2) == expected.map(\.2))
        #expect(try data.scanIntegrity().damage.isEmpty)
    }

    @Test func openingItForWritingUpgradesEveryRecordAndKeepsEveryAction() throws {
        let dir = try TemporaryDirectory()
        let path = try copyOfFixture(dir)
        do {
            let data = try DataDirectory(path: path, reducerName: "reel.json")
            #expect(data.metadata.formatVersion == DataDirectory.formatVersion)
            #expect(data.upgradedRecords == 33 + 4 + 2)  // actions, checkpoints, idempotency keys
            #expect(!data.acceptsLegacyRecords)
        }
        let data = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        #expect(data.metadata.formatVersion == "2")
        #expect(!data.acceptsLegacyRecords)
        let expected = try exported()
        let found = try actions(data)
        #expect(found.map(\.0) == expected.map(\.0))
        #expect(found.map(\.1) == expected.map(\.1))
        #expect(found.map(\.2) == expected.map(\.2))
        #expect(try data.checkpointHeaders().map(\.seq) == [10, 20, 31, 33])
        #expect(try data.dedupRecord(forKey: "k-batch") == DedupRecord(firstSeq: 30, count: 2))
        let scan = try data.scanIntegrity()
        #expect(scan.damage.isEmpty)
        #expect(scan.actions == 33)
    }

    @Test func anUpgradeCutShortRunsAgainAtTheNextOpen() throws {
        let dir = try TemporaryDirectory()
        let path = try copyOfFixture(dir)
        _ = try DataDirectory(path: path, reducerName: "reel.json")
        // As if the process died after rewriting the records, before recording format 2: the
        // records are already of version 2 while the directory says format 1.
        do {
            let env = try LMDBEnvironment(path: path)
            let meta = try #require(try env.openDatabase("meta"))
            try env.write { txn in
                try txn.put(Array("1".utf8), forKey: Array("format".utf8), in: meta)
                _ = try txn.delete(Array("checksum".utf8), in: meta)
            }
        }
        let data = try DataDirectory(path: path, reducerName: "reel.json")
        #expect(data.metadata.formatVersion == "2")
        #expect(try actions(data).map(\.2) == exported().map(\.2))
    }

    @Test func aRecordWithoutChecksumIsDamageInAFormat2Directory() throws {
        let dir = try TemporaryDirectory()
        let path = try copyOfFixture(dir)
        // Upgrade, then put one version-1 record back, as damage to the version byte would.
        _ = try DataDirectory(path: path, reducerName: "reel.json")
        let legacy = try EnvelopeCodec.encode(#require(try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true)).envelope(at: 3)))
        do {
            let env = try LMDBEnvironment(path: path)
            let log = try #require(try env.openDatabase("log"))
            var record = Array(legacy.dropLast(8))
            record[0] = 1
            try env.write { txn in try txn.put(record, forKey: seqKey(3), in: log) }
        }
        let data = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        #expect(throws: StorageError.self) { _ = try data.envelope(at: 3) }
        #expect(try data.scanIntegrity().damage.map(\.seq) == [3])
    }
}
