import Foundation
import ReelCore
import ReelJSON

/// One checkpoint interval of ``ShadowCheckpointPass``.
struct ShadowSegment: Sendable {
    var from: UInt64
    var through: UInt64

    struct Outcome: Sendable {
        var segment: ShadowSegment
        /// The seqs this version refused in it.
        var refused: [UInt64] = []
        /// The digests of this version's state at the segment's end, and of the checkpoint there.
        var digests: [String: String] = [:]
        var recorded: [String: String] = [:]
        /// Why the segment could not be folded (a checkpoint that does not load into this
        /// version's state, say): the pass ends before it.
        var problem: String?
    }
}

/// The first pass of `shadow` when the data directory holds the baseline's own checkpoints: the
/// history as the baseline folded it is already there, a state every few thousand actions, so
/// only this version folds, each interval between two checkpoints on its own (as many at once as
/// there are cores), from the state of the checkpoint that starts it, and its end is compared
/// with the checkpoint that ends it.
///
/// While every interval agrees this is exactly the replay from the start: the first starts from
/// the initial state, and each next one from a state equal to what this version made. At the
/// first interval that differs (or one the pass cannot fold) the pass stops; `shadow` goes on
/// from the last checkpoint that agreed with both versions folding side by side, as it does
/// from the start without such checkpoints. The baseline's checkpoints stand for its replay only
/// if they are its own (its reducers' name and version) and intact; the actions of the
/// intervals that agreed were accepted by the baseline when they were logged, so those refused
/// by this version alone are the only refusals the pass can find. It compares where `shadow`
/// always does (``schedule(latest:every:checkpoints:)``), and ends at the first point that is not
/// a checkpoint of the baseline's.
enum ShadowCheckpointPass {
    struct Result {
        /// The last checkpoint at which every part agreed (0: none).
        var agreedThrough: UInt64 = 0
        var refusedByThisOnly: [UInt64] = []
        /// Every part compared.
        var parts: Set<String> = []
    }

    /// Segments folded at once per core, between looks at the outcomes.
    static let segmentsPerCore = 4

    /// Where `shadow` compares the versions: at the data directory's checkpoints, each time at
    /// the last one within `every` actions of the previous point, or `every` actions on where
    /// there is none; the last point is the latest seq. A schedule of the directory and `every`
    /// alone, so that the report is the same whether the pass runs or not (the step-through that
    /// names a part's first differing seq starts at the previous point: compared elsewhere, a
    /// difference that comes and goes could be named or not).
    static func schedule(latest: UInt64, every: UInt64, checkpoints: [UInt64]) -> [UInt64] {
        var points: [UInt64] = []
        var at: UInt64 = 0
        var next = checkpoints.startIndex
        while at < latest {
            let limit = min(latest, at + every)
            var point = limit
            while next < checkpoints.endIndex, checkpoints[next] <= limit {
                if checkpoints[next] > at { point = checkpoints[next] }
                next += 1
            }
            points.append(point)
            at = point
        }
        return points
    }

    /// The pass over the first points of `schedule` that are checkpoints of the baseline's, or
    /// `nil` when it does not apply (a baseline from before it, or one whose checkpoints these
    /// are not).
    static func run(
        mine: any LocalShadow, theirs: any ShadowSide, schedule: [UInt64], checkpoints: [(seq: UInt64, reducer: ReducerIdentity)],
        paths: [JSONPointer], ignored: Set<String>, progress: (UInt64) -> Void
    ) throws(ToolError) -> Result? {
        guard let baseline = try theirs.identity() else { return nil }
        let theirsAt = Set(checkpoints.filter { $0.reducer == baseline }.map(\.seq))
        var segments: [ShadowSegment] = []
        var from: UInt64 = 0
        for point in schedule {
            guard theirsAt.contains(point) else { break }
            segments.append(ShadowSegment(from: from, through: point))
            from = point
        }
        guard !segments.isEmpty else { return nil }
        var result = Result()
        let wave = max(1, ProcessInfo.processInfo.activeProcessorCount) * segmentsPerCore
        var next = 0
        while next < segments.count {
            let batch = Array(segments[next..<min(next + wave, segments.count)])
            next += batch.count
            for outcome in mine.foldSegments(batch, paths: paths) {
                guard outcome.problem == nil else { return result }
                let keys = Set(outcome.digests.keys).union(outcome.recorded.keys).subtracting(ignored)
                guard keys.allSatisfy({ outcome.digests[$0] == outcome.recorded[$0] }) else { return result }
                result.refusedByThisOnly += outcome.refused
                result.parts.formUnion(keys)
                result.agreedThrough = outcome.segment.through
                progress(outcome.segment.through)
            }
        }
        return result
    }
}
