import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// Checkpoints every N actions, or sooner when the actions since the last one are heavy: the
/// replay behind any seq stays bounded in bytes, not only in count.
@Suite(.heavy) struct CheckpointSpacingTests {
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

    @Test func neverMoreCheckpointThanLog() {
        var spacing = CheckpointSpacing(options: StoreOptions(checkpointEvery: 10), lastSeq: 0)
        spacing.logged(bytes: 500)
        #expect(spacing.isDue(at: 10))
        spacing.checkpointed(at: 10)
        spacing.encoded(stateBytes: 100_000)  // a large state
        spacing.logged(bytes: 99_999)
        #expect(!spacing.isDue(at: 1_000))  // ten times the count, but less log than checkpoint
        spacing.logged(bytes: 1)
        #expect(spacing.isDue(at: 1_000))
    }

    /// A large state under small actions: the importer takes one checkpoint by count, then waits
    /// until the log since it weighs as much as it does, so the data file's checkpoints never
    /// outgrow its log.
    @Test func aLargeStateIsCheckpointedOnlyAsOftenAsTheLogPaysForIt() throws {
        let dir = try TemporaryDirectory()
        let importer = try LogImporter(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 10))
        let big = String(repeating: "y", count: 300_000)
        try importer.append(ActionEnvelope(
            seq: 1, action: Action(type: "set", payload: ["path": "/big", "value": .string(big)]), time: .now(), peer: .unknown
        ))
        for seq in 2...3_000 {
            try importer.append(ActionEnvelope(
                seq: UInt64(seq), action: Action(type: "increment", payload: ["path": "/n"]), time: .now(), peer: .unknown
            ))
        }
        _ = try importer.finish()
        let directory = importer.timeline.directory
        // By count at 10 (the log then holds the 300 KB action), not again while 2,990 small
        // actions (about 30 bytes each) weigh less than that checkpoint; then the one at the end.
        #expect(try directory.checkpointHeaders().map(\.seq) == [10, 3_000])
        let state = try #require(try directory.checkpoint(at: 3_000)).state()
        #expect(state["n"] == .int(2_999) && state["big"] == .string(big))
    }

    /// The same in the writer, which learns a checkpoint's size once it is encoded beside it: one
    /// or two checkpoints of the large state (a second may be asked for before the first one's
    /// size is known), not thirty.
    @Test func theWriterCheckpointsALargeStateOnlyAsOftenAsTheLogPaysForIt() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 10))
        try await store.dispatch(Action(type: "set", payload: ["path": "/big", "value": .string(String(repeating: "y", count: 300_000))]))
        for _ in 0..<30 {
            try await store.dispatch(batch: Array(repeating: Action(type: "increment", payload: ["path": "/n"]), count: 10))
        }
        await store.close()
        let seqs = try store.directory.checkpointHeaders().map(\.seq)
        #expect(seqs.last == 301)
        #expect((1...2).contains(seqs.dropLast().count), "checkpoints at \(seqs)")
    }

    /// A state whose checkpoints pass 1 MiB is checkpointed from the encoder's own copy, brought
    /// forward by folding the log (a `@revert` included): each checkpoint is the state a replay
    /// gives at its seq.
    @Test func aLargeStateIsCheckpointedFromTheEncodersOwnCopy() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 5)
        options.checkpointEveryBytes = 0
        let store = try Store(path: dir.path, definition: .stock, options: options)
        try await store.dispatch(Action(type: "set", payload: ["path": "/big", "value": .string(String(repeating: "b", count: 1_200_000))]))
        for i in 1...60 {
            if i == 30 {
                try await store.dispatch(Action(type: "@revert", payload: ["to": 20]))
                continue
            }
            let blob = String(repeating: Character(String(i % 10)), count: 100_000)
            try await store.dispatch(batch: [
                Action(type: "set", payload: ["path": .string("/blob\(i % 3)"), "value": .string(blob)]),
                Action(type: "increment", payload: ["path": "/n"]),
            ])
        }
        await store.close()
        let seqs = try store.directory.checkpointHeaders().map(\.seq)
        // The first by count; then one per 1.2 MiB or more of log, from the encoder's own copy.
        #expect(seqs.count >= 4, "checkpoints at \(seqs)")
        let replay = Timeline(directory: store.directory, definition: RecoveryTests.definition(version: "replay-only"))
        for seq in seqs {
            let checkpoint = try #require(try store.directory.checkpoint(at: seq))
            #expect(checkpoint.stateBytes.count > 1 << 20)
            #expect(try checkpoint.state() == replay.state(at: seq), "checkpoint at \(seq)")
        }
    }

    /// Heavy actions one at a time through the store: a checkpoint about every 16 of them (64 KiB
    /// of records), far below the count of 10,000, each one the state a replay gives.
    @Test func theWriterCheckpointsHeavyActionsByTheirBytes() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: Self.options)
        for i in 1...80 {
            // Each dispatch after the checkpoint before it is encoded: the writer asks for none
            // while one is encoding (it takes the next when it is done), and on a loaded machine
            // an encode can outlast the next sixteen dispatches.
            try await waitUntil("the last checkpoint encoded") { !store.writer.checkpointEncoder.isEncoding }
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
        let rebuilt = Timeline(directory: store.directory, definition: RecoveryTests.definition(version: "replay-only"))
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
