import Foundation
import Logging
import ReelCore
import ReelStorage
import Synchronization

/// Encodes checkpoints on a thread of its own; those of a large state from a copy of the state
/// that it keeps and brings forward by folding the log, never from one of the writer's two copies.
///
/// Encoding a large state takes seconds (1.2 s for a million keys). Were the encoder to hold one
/// of the writer's copies all that time, the writer would have to copy that state whole when it
/// takes the copy back (`Writer.commitGroup`), on the write path. Folding the actions since the
/// last checkpoint costs little in comparison, and happens here too. The first copy is rebuilt
/// from the log (the newest checkpoint and the actions after it) when the first checkpoint is
/// asked for, so it shares nothing with the writer's: memory for a third state, in exchange for a
/// write path that never copies one.
final class CheckpointEncoder<State: StoreState>: @unchecked Sendable {
    // @unchecked: `copy` is touched only on `queue`.
    /// Encodes at background priority: a checkpoint is work nobody waits for, and on a machine
    /// whose cores the requests keep busy it would otherwise pause the answers while it runs.
    private let queue = BackgroundQueue(name: "reel-checkpoint")
    private let timeline: Timeline<State>
    private let logger: Logger
    /// The encoder's own state and its seq, once a checkpoint was asked for.
    private var copy: (seq: UInt64, state: State)?
    /// Encodes asked for and not finished.
    private let unfinished = Atomic<Int>(0)

    init(timeline: Timeline<State>, logger: Logger) {
        self.timeline = timeline
        self.logger = logger
    }

    /// Below this size (of the last checkpoint's state) the writer hands the encoder its
    /// published copy to encode: copying a state that small when the writer takes the copy back
    /// costs less than folding every action a third time (about 6% of the server's CPU at 50
    /// clients × 16 pipelined); above it, the encoder's own copy.
    static var ownCopyAboveBytes: Int { 1 << 20 }

    /// Starts encoding the checkpoint at `seq` (a committed seq): of `published`, the state at
    /// `seq`, when given, or else of the encoder's own copy brought forward. `deliver` gets it on
    /// the encoder's thread.
    func encode(at seq: UInt64, published: State?, deliver: @escaping @Sendable (Checkpoint) -> Void) {
        unfinished.add(1, ordering: .relaxed)
        queue.async { [self] in
            defer { unfinished.subtract(1, ordering: .releasing) }
            let checkpoint: Checkpoint?
            if let published {
                copy = nil  // it would fall behind: rebuilt from the log if it is needed again
                checkpoint = Self.checkpoint(of: published, at: seq, reducer: timeline.definition.identity, logger: logger)
            } else {
                checkpoint = advanceAndEncode(to: seq)
            }
            if let checkpoint { deliver(checkpoint) }
        }
    }

    /// Whether an encode asked for has not finished: the writer asks for no other meanwhile.
    /// A large state takes seconds to encode, longer than `checkpointEvery` actions may take to
    /// arrive; asking again each time queued encodes without end, each writing the whole state.
    var isEncoding: Bool { unfinished.load(ordering: .acquiring) > 0 }

    /// Waits for the encodes asked for so far.
    func waitForPending() {
        queue.waitUntilIdle()
    }

    /// The checkpoint of `state` at `seq`, or `nil` (logged) when the state does not convert to JSON.
    static func checkpoint(of state: State, at seq: UInt64, reducer: ReducerIdentity, logger: Logger) -> Checkpoint? {
        do {
            return Checkpoint(seq: seq, reducer: reducer, time: .now(), state: try state.jsonValue())
        } catch {
            logger.error("cannot checkpoint seq \(seq): the state does not convert to JSON: \(error.message)")
            return nil
        }
    }

    private func advanceAndEncode(to seq: UInt64) -> Checkpoint? {
        do throws(StoreError) {
            var rebuilt: Reconstruction<State>
            if let kept = copy?.seq, kept <= seq {
                // Moved out of `copy`, not copied: a second reference would make the fold below
                // copy the whole state.
                rebuilt = Reconstruction(
                    seq: seq, state: copy.take()!.state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: []
                )
                try timeline.replay(from: kept + 1, through: seq, into: &rebuilt, skipping: [])
                guard rebuilt.refused.isEmpty else {
                    // The writer committed these: reducers that refuse them now are not pure.
                    throw StoreError(.storage, "the reducers refused logged actions \(rebuilt.refused.map(\.seq)) on the way to seq \(seq)")
                }
            } else {
                // The first time, after a failure, or (never) for a seq before the copy's.
                copy = nil
                rebuilt = try timeline.reconstruct(at: seq)
            }
            let checkpoint = Self.checkpoint(of: rebuilt.state, at: seq, reducer: timeline.definition.identity, logger: logger)
            copy = (seq, rebuilt.state)
            return checkpoint
        } catch {
            // Started again from the log next time (`copy` stays empty until then).
            logger.error("cannot checkpoint seq \(seq): \(error.message)")
            return nil
        }
    }
}
