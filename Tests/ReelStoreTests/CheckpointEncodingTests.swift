import Foundation
import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// How the writer asks for checkpoints of a state that takes long to encode.
@Suite(.heavy) struct CheckpointEncodingTests {
    /// A counter whose conversion to JSON (what a checkpoint encodes) takes `encodeDelay`, as a
    /// large state's does. The sleep is the thing under test (an encode that takes long), not a
    /// wait for anything: on a busy machine it only takes longer, which the bound below allows.
    struct SlowState: StoreState {
        static let encodeDelay = 0.3
        var count = 0

        func jsonValue() throws(JSONError) -> JSONValue {
            Thread.sleep(forTimeInterval: Self.encodeDelay)
            return ["count": .int(Int64(count))]
        }
    }

    struct Count: Reducer {
        let actionTypes: Set<String> = ["count"]
        func reduce(into state: inout SlowState, action: ActionEnvelope) throws(ReducerError) {
            state.count += 1
        }
    }

    static let definition = StoreDefinition(name: "slow", version: "1", initialState: SlowState(), reducer: Count())

    /// One encode at a time: a checkpoint due while another is being encoded is not asked for,
    /// since each queued encode would later write the whole state (a million-key state,
    /// checkpointed every 10,000 actions at 50,000 actions/s, queued one 45 MiB checkpoint every
    /// 0.2 s and encoded one every 1.3 s: without end).
    @Test func aCheckpointIsNotAskedForWhileOneIsEncoded() async throws {
        let dir = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 5, storage: .init(durable: false))
        options.checkpointAtShutdown = false
        // The change index of a typed state converts it to JSON once per action: not what is
        // under test here, and at `encodeDelay` each it would make this test last minutes.
        options.changeIndex = false
        // (In a scope of its own: the store must be gone before the directory is opened again.)
        let elapsed: Double = try await {
            let store = try Store(path: dir.path, definition: Self.definition, options: options)
            let started = ContinuousClock.now
            for _ in 0..<300 {
                try await store.dispatch(Action(type: "count"))
            }
            let elapsed: Double = (ContinuousClock.now - started) / .seconds(1)
            await store.close()
            return elapsed
        }()
        let directory = try DataDirectory(path: dir.path, reducerName: "slow")
        let written = try directory.checkpointHeaders()
        // 60 were due; at most one encode runs at a time, each taking `encodeDelay`.
        let bound = Int(elapsed / SlowState.encodeDelay) + 2
        #expect(!written.isEmpty)
        #expect(written.count <= bound, "\(written.count) checkpoints in \(elapsed) s, at most \(bound) expected")
        #expect(written.count < 60)
        // Each is the state at its seq.
        for checkpoint in written {
            let full = try #require(try directory.checkpoint(at: checkpoint.seq))
            #expect(try full.state(checkingHash: true) == ["count": .int(Int64(checkpoint.seq))])
        }
    }
}
