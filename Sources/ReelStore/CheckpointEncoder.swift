import Foundation
import Logging
import ReelCore
import ReelStorage

/// Encodes checkpoints on a thread of its own, from a copy of the state that it keeps and brings
/// forward by folding the log, never from one of the writer's two copies.
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
    private let queue = DispatchQueue(label: "reel.checkpoint-encoder")
    private let timeline: Timeline<State>
    private let logger: Logger
    /// The encoder's own state and its seq, once a checkpoint was asked for.
    private var copy: (seq: UInt64, state: State)?

    init(timeline: Timeline<State>, logger: Logger) {
        self.timeline = timeline
        self.logger = logger
    }

    /// Starts encoding the checkpoint at `seq` (a committed seq); `deliver` gets it on the
    /// encoder's thread.
    func encode(at seq: UInt64, deliver: @escaping @Sendable (Checkpoint) -> Void) {
        queue.async { [self] in
            if let checkpoint = advanceAndEncode(to: seq) { deliver(checkpoint) }
        }
    }

    /// Waits for the encodes asked for so far.
    func waitForPending() {
        queue.sync {}
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
            var current: (seq: UInt64, state: State)
            if let kept = copy.take(), kept.seq <= seq {
                current = kept
            } else {
                // The first time, after a failure, or (never) for a seq before the copy's.
                current = (seq, try timeline.state(at: seq))
            }
            if current.seq < seq {
                var rebuilt = Reconstruction(
                    seq: seq, state: current.state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: []
                )
                try timeline.replay(from: current.seq + 1, through: seq, into: &rebuilt, skipping: [])
                guard rebuilt.refused.isEmpty else {
                    // The writer committed these: reducers that refuse them now are not pure.
                    throw StoreError(.storage, "the reducers refused logged actions \(rebuilt.refused.map(\.seq)) on the way to seq \(seq)")
                }
                current = (seq, rebuilt.state)
            }
            let checkpoint = Self.checkpoint(of: current.state, at: seq, reducer: timeline.definition.identity, logger: logger)
            copy = current
            return checkpoint
        } catch {
            // Started again from the log next time (`copy` stays empty until then).
            logger.error("cannot checkpoint seq \(seq): \(error.message)")
            return nil
        }
    }
}
