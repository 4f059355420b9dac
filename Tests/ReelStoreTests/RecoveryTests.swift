import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// Opening a data directory again: checkpoints, replay, reducer versions.
@Suite(.heavy) struct RecoveryTests {
    static func definition(version: String) -> StoreDefinition<JSONValue> {
        var definition = StoreDefinition<JSONValue>.stock
        definition.identity.version = version
        return definition
    }

    func fill(_ store: Store<JSONValue>, count: Int) async throws {
        for i in 0..<count {
            try await store.dispatch(Action(type: "increment", payload: ["path": .string("/c\(i % 7)"), "by": .int(Int64(i))]))
            if i % 5 == 0 {
                try await store.dispatch(Action(type: "append", payload: ["path": "/log", "value": .int(Int64(i))]))
            }
        }
    }

    @Test func reopeningWithoutACheckpointReplaysTheWholeLog() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 0)
        options.checkpointAtShutdown = false
        let expected: StoreSnapshot<JSONValue>
        do {
            let store = try Store(path: dir.path, definition: .stock, options: options)
            try await fill(store, count: 40)
            expected = store.snapshot
            await store.close()
        }
        let reopened = try Store(path: dir.path, definition: .stock, options: options)
        #expect(try reopened.directory.checkpointHeaders().isEmpty)
        #expect(reopened.statistics.restoredFromCheckpoint == nil)
        #expect(reopened.statistics.replayedAtOpen == Int(expected.seq))
        #expect(reopened.snapshot.seq == expected.seq)
        #expect(reopened.snapshot.state == expected.state)
        await reopened.close()
    }

    @Test func reopeningAfterACleanCloseStartsFromTheShutdownCheckpoint() async throws {
        let dir = try TemporaryDirectory()
        let expected: StoreSnapshot<JSONValue>
        do {
            let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 0))
            try await fill(store, count: 30)
            expected = store.snapshot
            await store.close()
        }
        let reopened = try Store(path: dir.path, definition: .stock)
        #expect(reopened.statistics.restoredFromCheckpoint == expected.seq)
        #expect(reopened.statistics.replayedAtOpen == 0)
        #expect(reopened.snapshot.state == expected.state)
        await reopened.close()
    }

    /// Reads a checkpoint of a closed directory (synchronously, so the directory is closed again
    /// when this returns).
    func storedCheckpoint(in path: String, at seq: UInt64) throws -> Checkpoint? {
        try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true)).checkpoint(at: seq)
    }

    @Test func aDamagedCheckpointIsPassedOverAndRebuiltAtOpen() async throws {
        let dir = try TemporaryDirectory()
        let expected: StoreSnapshot<JSONValue>
        do {
            let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 0))
            try await fill(store, count: 30)
            expected = store.snapshot
            await store.close()
        }
        let intact = try storedCheckpoint(in: dir.path, at: expected.seq)
        #expect(intact != nil)
        // One bit of the shutdown checkpoint's state, flipped on disk.
        try damageStoredRecord(in: dir.path, database: "checkpoints", key: seqKey(expected.seq), bit: -100)
        do {
            let reopened = try Store(path: dir.path, definition: .stock)
            // Restored by replaying the whole log, not from the damaged checkpoint…
            #expect(reopened.statistics.restoredFromCheckpoint == nil)
            #expect(reopened.statistics.replayedAtOpen == Int(expected.seq))
            #expect(reopened.snapshot.state == expected.state)
            // …which was written again at the same seq, with the same state.
            let rebuilt = try reopened.directory.checkpoint(at: expected.seq)
            #expect(rebuilt?.hash == intact?.hash)
            #expect(try reopened.directory.scanIntegrity().damage.isEmpty)
            await reopened.close()
        }
        let again = try Store(path: dir.path, definition: .stock)
        #expect(again.statistics.restoredFromCheckpoint == expected.seq)
        await again.close()
    }

    @Test func aDamagedActionStopsTheStoreFromOpening() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 0)
        options.checkpointAtShutdown = false
        do {
            let store = try Store(path: dir.path, definition: .stock, options: options)
            try await fill(store, count: 10)
            await store.close()
        }
        try damageStoredRecord(in: dir.path, database: "log", key: seqKey(4), bit: 20)
        do {
            _ = try Store(path: dir.path, definition: .stock, options: options)
            Issue.record("a store opened on a damaged log")
        } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains("action 4 is damaged"))
        }
    }

    @Test func periodicCheckpointsAreWrittenOffTheWritePath() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 10))
        try await fill(store, count: 60)
        // Checkpoints are encoded on another thread and stored with a later commit.
        try await store.dispatch(Action(type: "set", payload: ["path": "/done", "value": true]))
        await store.close()
        let headers = try store.directory.checkpointHeaders()
        #expect(headers.count >= 3)
        for header in headers {
            let checkpoint = try #require(try store.directory.checkpoint(at: header.seq))
            #expect(checkpoint.isIntact)
            let rebuilt = try Timeline(directory: store.directory, definition: Self.definition(version: "other"))
                .state(at: header.seq)
            #expect(try checkpoint.state() == rebuilt, "checkpoint at \(header.seq) differs from a replay")
        }
    }

    @Test func aCheckpointOfAnotherReducerVersionIsIgnored() async throws {
        let dir = try TemporaryDirectory()
        let expected: StoreSnapshot<JSONValue>
        do {
            let store = try Store(path: dir.path, definition: Self.definition(version: "1"))
            try await fill(store, count: 25)
            expected = store.snapshot
            await store.close()
        }
        #expect(try DataDirectory(path: dir.path, reducerName: nil, options: .init(readOnly: true)).checkpointHeaders().count == 1)
        let upgraded = try Store(path: dir.path, definition: Self.definition(version: "2"))
        #expect(upgraded.statistics.restoredFromCheckpoint == nil)
        #expect(upgraded.statistics.replayedAtOpen == Int(expected.seq))
        #expect(upgraded.snapshot.state == expected.state)
        let reconstruction = try upgraded.timeline.reconstruct(at: expected.seq)
        #expect(reconstruction.skippedCheckpoints.map(\.seq) == [expected.seq])
        await upgraded.close()
    }

    @Test func aDirectoryOfAnotherReducerIsRefused() async throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try Store(path: dir.path, definition: .stock)
            await store.close()
        }
        var other = StoreDefinition<JSONValue>.stock
        other.identity.name = "someone-else"
        do {
            _ = try Store(path: dir.path, definition: other)
            Issue.record("opened a directory made for another reducer")
        } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains("reel.json"))
        }
    }
}
