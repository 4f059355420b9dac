import Foundation
import PropertyBased
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// Replaying from any checkpoint gives exactly the state replaying from the start gives, for random
/// action sequences (refused actions, reverts and batches included).
@Suite(.heavy) struct ReplayPropertyTests {
    /// Turns a random number into one stock action over a small key space, so that actions collide
    /// and some are refused (removing what is gone, incrementing a list…).
    static func action(_ code: Int, latest: UInt64) -> Action {
        let key = "/k\(code % 4)"
        let value = JSONValue.int(Int64(code % 11) - 5)
        switch (code / 4) % 8 {
        case 0: return Action(type: "set", payload: ["path": .string(key), "value": value])
        case 1: return Action(type: "increment", payload: ["path": .string(key), "by": value])
        case 2: return Action(type: "append", payload: ["path": "/list", "value": value])
        case 3: return Action(type: "remove", payload: ["path": .string(key)])
        case 4: return Action(type: "merge", payload: ["m": [String(code % 3): value]])
        case 5: return Action(type: "patch", payload: [["op": "add", "path": .string(key), "value": ["n": value]]])
        case 6: return Action(type: "@revert", payload: ["to": .int(Int64(UInt64(code) % (latest + 1)))])
        default: return Action(type: "set", payload: ["path": .string("/k\(code % 4)/deep"), "value": value])
        }
    }

    @Test func replayFromAnyCheckpointEqualsReplayFromTheStart() async throws {
        await propertyCheck(count: 20, input: Gen.int(in: 0...100_000).array(of: 1...80), Gen.int(in: 1...9)) { codes, every in
            do {
                let dir = try TemporaryDirectory()
                let options = StoreOptions(checkpointEvery: UInt64(every), storage: .init(durable: false))
                let store = try Store(path: dir.path, definition: .stock, options: options)
                var expected: [UInt64: JSONValue] = [0: .object([:])]
                for code in codes {
                    let latest = store.snapshot.seq
                    let actions = code % 9 == 0
                        ? [Self.action(code, latest: latest), Self.action(code / 3, latest: latest)]
                        : [Self.action(code, latest: latest)]
                    do {
                        let result = try await store.dispatch(batch: actions)
                        expected[result.seqs.upperBound] = store.snapshot.state
                    } catch let error as StoreError where error.code == .rejected || error.code == .seqOutOfRange {
                        // Refused: nothing logged, state unchanged.
                        #expect(store.snapshot.seq == latest)
                    }
                }
                await store.close()

                let withCheckpoints = store.timeline
                // Another version: every checkpoint is passed over, so this replays from seq 1.
                let fromStart = RecoveryTests.definition(version: "never-checkpointed")
                let noCheckpoints = Timeline(directory: store.directory, definition: fromStart)
                let latest = try withCheckpoints.latestSeq()
                for seq in 0...latest {
                    let a = try withCheckpoints.state(at: seq)
                    let b = try noCheckpoints.state(at: seq)
                    #expect(a.binaryEncoded() == b.binaryEncoded(), "state at \(seq) differs")
                    if let known = expected[seq] {
                        #expect(a == known, "state at \(seq) is not what the writer published")
                    }
                }
                #expect(try noCheckpoints.reconstruct(at: latest).checkpointSeq == nil)
            } catch {
                Issue.record("unexpected error: \(error)")
            }
        }
    }
}
