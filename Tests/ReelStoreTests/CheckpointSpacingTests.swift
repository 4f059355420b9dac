import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// Checkpoints every N actions, or sooner when the actions since the last one are heavy: the
/// replay behind any seq stays bounded in bytes, not only in count.
struct CheckpointSpacingTests {
    /// An action of about 4 KB in the log.
    static func heavy(_ i: Int) -> Action {
        Action(type: "set", payload: ["path": .string("/blob\(i % 3)"), "value": .string(String(repeating: "x", count: 4_000) + "\(i)")])
    }

    static let options: StoreOptions = {
        var options = StoreOptions(checkpointEvery: 10_000)
        options.checkpointEveryBytes = 64 << 10
        return options
    }()

    @Test func theRulesOfSpacing() {
        var spacing = CheckpointSpacing(options: Self.options, lastSeq: 100)
        #expect(!spacing.isDue(at: 100))
        spacing.logged(bytes: 60_000)
        #expect(!spacing.isDue(at: 150))
        #expect(spacing.isDue(at: 10_100))  // the count alone
        spacing.logged(bytes: 6_000)
        #expect(spacing.isDue(at: 151))  // the bytes: 66,000 >= 65,536
        spacing.checkpointed(at: 151)
        #expect(!spacing.isDue(at: 151) && !spacing.isDue(at: 152))
        #expect(spacing.bytesSince == 0 && spacing.lastSeq == 151)

        // `checkpointEvery` 0 means checkpoints at shutdown only, however heavy the actions.
        var none = StoreOptions(checkpointEvery: 0)
        none.checkpointEveryBytes = 1
        var never = CheckpointSpacing(options: none, lastSeq: 0)
        never.logged(bytes: 1 << 30)
        #expect(!never.isDue(at: 1_000_000))
    }

    /// Heavy actions one at a time through the store: a checkpoint about every 16 of them (64 KiB
    /// of records), far below the count of 10,000, each one the state a replay gives.
    @Test func theWriterCheckpointsHeavyActionsByTheirBytes() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: Self.options)
        for i in 1...80 {
            try await store.dispatch(Self.heavy(i))
        }
        await store.close()
        let seqs = try store.directory.checkpointHeaders().map(\.seq)
        // Periodic ones at 16 or 17 actions apart (the encode runs beside the writer, so one can
        // be stored with a later commit, but it is taken at the seq where it was due), then the
        // one at shutdown.
        #expect(seqs.count >= 5, "checkpoints at \(seqs)")
        for (before, after) in zip([0] + seqs, seqs).dropLast() {
            #expect((15...17).contains(after - before), "checkpoints at \(seqs)")
        }
        #expect(seqs.last == 80)
        let rebuilt = Timeline(directory: store.directory, definition: {
            var other = StoreDefinition<JSONValue>.stock
            other.identity.version = "replay-only"
            return other
        }())
        for seq in seqs {
            let checkpoint = try #require(try store.directory.checkpoint(at: seq))
            #expect(try checkpoint.state() == rebuilt.state(at: seq))
        }
    }

    @Test func theImporterSpacesCheckpointsTheSameWay() throws {
        let dir = try TemporaryDirectory()
        let importer = try LogImporter(path: dir.path, definition: .stock, options: Self.options)
        for i in 1...80 {
            try importer.append(ActionEnvelope(seq: UInt64(i), action: Self.heavy(i), time: .now(), peer: .unknown))
        }
        let report = try importer.finish()
        let seqs = try importer.timeline.directory.checkpointHeaders().map(\.seq)
        #expect(report.checkpoints == seqs.count)
        #expect(seqs.count == 5, "checkpoints at \(seqs)")  // 4 by bytes, one at the end
        for (before, after) in zip([0] + seqs, seqs).dropLast() {
            #expect((15...17).contains(after - before), "checkpoints at \(seqs)")
        }
        #expect(seqs.last == 80)
    }
}
