import Dispatch
import Foundation
import ReelStorage
import Synchronization

/// The parts of a range of the log that the cores fold at once to build the change index, split
/// while they are folded: a core that runs out of parts takes the back half of what the part
/// with the most left still has to fold.
///
/// Equal parts do not take equal time (the actions that set a state up cost several times those
/// that change it, and a core shares its time with the store's other threads): with parts fixed
/// in advance, one core sat idle for the end of the other's, a sixth of the build. Splitting
/// costs the new part a reconstruction of its first state (a checkpoint and up to an interval of
/// replay), so it is done only where at least ``minimumSplit`` actions are left.
///
/// A part reports every ``checkEvery`` seqs how far it is (``reached(_:part:progress:)``), under
/// the lock a split takes, and is told there where it ends: a split's boundary is never before
/// the part's next report, so the part has not folded past it.
///
/// A part that starts right after a checkpoint finds its first state in the checkpoint alone;
/// one that starts anywhere else also replays from the checkpoint before it, up to an interval
/// (a twentieth of a million-action build went to those replays). So parts start right after
/// checkpoints where there are some (``init(first:last:count:checkEvery:minimumSplit:checkpoints:)``),
/// and a split's boundary is the checkpoint nearest the middle of what is left.
final class ChangeIndexParts: Sendable {
    /// A part to fold: its index, first seq, and last seq as it stood when it was taken.
    struct Taken {
        var index: Int
        var start: UInt64
        var end: UInt64
    }

    private struct Part {
        var start: UInt64
        /// The last seq the part is to fold: lowered when its back is split off.
        var end: UInt64
        /// The last seq it reported folding (`start - 1` until it has).
        var reached: UInt64
        var taken = false
        /// How many actions the part has still to fold.
        var left: UInt64 { end - reached }
    }

    private struct Board {
        var parts: [Part]
        var stopped = false
    }

    private let board: Mutex<Board>
    /// How often (in seqs, a power of two) a part reports how far it is.
    let checkEvery: UInt64
    /// The fewest actions left in a part for its back half to be split off.
    let minimumSplit: UInt64
    /// The seqs of the checkpoints a part may start after, in order.
    private let checkpoints: [UInt64]

    /// `first…last` in `count` parts of about equal length, each after the first starting right
    /// after the checkpoint (of `checkpoints`, in order) before where an equal part would start,
    /// when there is one past the part before.
    init(first: UInt64, last: UInt64, count: Int, checkEvery: UInt64, minimumSplit: UInt64, checkpoints: [UInt64] = []) {
        precondition(0 < first && first <= last && count > 0 && checkEvery > 0 && checkEvery & (checkEvery - 1) == 0)
        let length = last - first + 1
        var starts: [UInt64] = []
        for index in 0..<count {
            let even = first + length * UInt64(index) / UInt64(count)
            guard let previous = starts.last else {
                starts.append(even)
                continue
            }
            let after = Self.checkpoint(atOrBefore: even - 1, in: checkpoints).map { $0 + 1 }
            starts.append(after.map { $0 > previous ? $0 : even } ?? even)
        }
        board = Mutex(Board(parts: starts.indices.map { index in
            let start = starts[index]
            return Part(start: start, end: index + 1 < starts.count ? starts[index + 1] - 1 : last, reached: start - 1)
        }))
        self.checkEvery = checkEvery
        self.minimumSplit = max(minimumSplit, 2)
        self.checkpoints = checkpoints
    }

    /// The newest of `checkpoints` (in order) at or before `seq`.
    private static func checkpoint(atOrBefore seq: UInt64, in checkpoints: [UInt64]) -> UInt64? {
        let index = firstIndex(after: seq, in: checkpoints)
        return index > 0 ? checkpoints[index - 1] : nil
    }

    /// The checkpoint of `range` nearest `seq`, if any.
    private static func checkpoint(nearest seq: UInt64, in range: ClosedRange<UInt64>, of checkpoints: [UInt64]) -> UInt64? {
        let index = firstIndex(after: seq, in: checkpoints)
        let around = [index > 0 ? checkpoints[index - 1] : nil, index < checkpoints.count ? checkpoints[index] : nil]
        return around.compactMap { $0 }.filter(range.contains).min { $0.distance(to: seq).magnitude < $1.distance(to: seq).magnitude }
    }

    /// The index of the first of `checkpoints` (in order) after `seq`.
    private static func firstIndex(after seq: UInt64, in checkpoints: [UInt64]) -> Int {
        var low = 0
        var high = checkpoints.count
        while low < high {
            let middle = (low + high) / 2
            if checkpoints[middle] <= seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The part to fold next: one nobody has taken, else the back half of the part that has the
    /// most left, split off it; `nil` when there is none worth splitting, or after ``stop()``.
    func take() -> Taken? {
        board.withLock { board -> Taken? in
            guard !board.stopped else { return nil }
            if let index = board.parts.firstIndex(where: { !$0.taken }) {
                board.parts[index].taken = true
                return Taken(index: index, start: board.parts[index].start, end: board.parts[index].end)
            }
            guard let index = board.parts.indices.max(by: { board.parts[$0].left < board.parts[$1].left }) else { return nil }
            let part = board.parts[index]
            guard part.left >= minimumSplit else { return nil }
            // The part has folded at most up to its next report (it reports under this lock), so
            // it can still end anywhere from there: at the checkpoint nearest the middle of what
            // it has left, or else at the first report at or past the middle.
            let middle = part.reached + part.left / 2
            let nextReport = (part.reached / checkEvery + 1) * checkEvery
            let slack = part.left / 4
            let lowest = max(nextReport, middle - slack)
            let highest = min(part.end - 1, middle + slack)
            let boundary = lowest <= highest ? Self.checkpoint(nearest: middle, in: lowest...highest, of: checkpoints) : nil
            let fallback = (middle + checkEvery - 1) / checkEvery * checkEvery
            guard let boundary = boundary ?? (fallback < part.end ? fallback : nil), boundary > part.reached else { return nil }
            board.parts[index].end = boundary
            board.parts.append(Part(start: boundary + 1, end: part.end, reached: boundary, taken: true))
            return Taken(index: board.parts.count - 1, start: boundary + 1, end: part.end)
        }
    }

    /// Records that part `index` has folded `seq` (a multiple of ``checkEvery``), and reports
    /// how many actions every part has folded to `progress` (called under the lock, so never from
    /// two threads at once). Returns the last seq the part is to fold: `seq` when it ends there,
    /// else one at or before its next report, or its end.
    func reached(_ seq: UInt64, part index: Int, progress: ((UInt64) -> Void)?) -> UInt64 {
        board.withLock { board -> UInt64 in
            board.parts[index].reached = seq
            if let progress { progress(board.parts.reduce(0) { $0 + ($1.reached + 1 - $1.start) }) }
            return board.stopped ? seq : max(seq, board.parts[index].end)
        }
    }

    /// Records that part `index` has folded everything it was to (nothing is left to split off).
    func finished(part index: Int) {
        board.withLock { $0.parts[index].reached = $0.parts[index].end }
    }

    /// Ends the folding early: no part is taken or split any more, and every part ends at its
    /// next report.
    func stop() {
        board.withLock { $0.stopped = true }
    }

    /// Every part, in the order of their seqs: its index, first and last seq.
    var partsInOrder: [Taken] {
        board.withLock { board in
            board.parts.indices.map { Taken(index: $0, start: board.parts[$0].start, end: board.parts[$0].end) }.sorted { $0.start < $1.start }
        }
    }
}

extension Timeline {
    /// Cores that build the change index at once (each part with the log's read-ahead beside it
    /// while a core is idle).
    static var changeIndexBuildThreads: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// The change index's lists of `first…last` (``changePostings(from:through:state:checkEvery:end:)``),
    /// folded on every core: the range is cut into one part per core (each at least `minimumPart`
    /// actions), a core that is done splits off the back half of a part still being folded
    /// (``ChangeIndexParts``), each part works out its lists on its core, and they are joined in
    /// order (``ChangeLists/joining(_:)``). The first part goes on from `state`, every other
    /// one from the state at its start (rebuilt from the checkpoint before it). `state` is left
    /// as the state at `last` (when `stop` did not end the folding early).
    ///
    /// The parts' folds are independent (a fold reads only its own state and the log), so the
    /// lists are those of one fold through the whole range.
    ///
    /// - Parameters:
    ///   - progress: called with the seq the folding has reached (the actions folded by every part)
    ///     now and then, never from two threads at once.
    ///   - stop: asked as often: `true` ends the folding early, the lists then covering less.
    func changeListsOnAllCores(
        from first: UInt64, through last: UInt64, state: inout State, minimumPart: UInt64, progress: ((UInt64) -> Void)? = nil,
        stop: (@Sendable () -> Bool)? = nil
    ) throws(StoreError) -> ChangeLists {
        let count = last >= first ? last - first + 1 : 0
        let initialParts = Int(min(UInt64(2 * Self.changeIndexBuildThreads), count / max(minimumPart, 1)))
        let workers = min(initialParts, Self.changeIndexBuildThreads)
        guard workers > 1 else {
            let postings = try changePostings(from: first, through: last, state: &state) { seq in
                progress?(seq)
                return stop?() == true ? seq : last
            }
            return ChangeLists(postings)
        }
        // Parts report every 1,024 seqs (a lock each time: nothing beside folding as many
        // actions), more often where parts are short (tests).
        var checkEvery: UInt64 = 1_024
        while checkEvery > 1, checkEvery * 4 > minimumPart { checkEvery /= 2 }
        // A part that starts right after a checkpoint rebuilds its first state without replaying.
        let checkpoints: [UInt64]
        do {
            checkpoints = try directory.checkpointSeqs(from: first, through: last, reducer: definition.identity)
        } catch {
            throw StoreError(error)
        }
        let parts = ChangeIndexParts(
            first: first, last: last, count: initialParts, checkEvery: checkEvery, minimumSplit: minimumPart, checkpoints: checkpoints
        )
        let folded = Mutex<[(index: Int, result: Result<(lists: ChangeLists, state: State?), StoreError>)]>([])
        let initial = state
        let timeline = self
        nonisolated(unsafe) let unsafeProgress = progress.map { report in { (folded: UInt64) in report(first - 1 + folded) } }
        DataDirectory.withWalksOccupying(workers) {
            DispatchQueue.concurrentPerform(iterations: workers) { _ in
                while let part = parts.take() {
                    let result = Result { () throws(StoreError) -> (lists: ChangeLists, state: State?) in
                        var partState = part.start == first ? initial : try timeline.state(at: part.start - 1)
                        let postings = try timeline.changePostings(
                            from: part.start, through: part.end, state: &partState, checkEvery: parts.checkEvery
                        ) { seq in
                            if let stop, stop() { parts.stop() }
                            return parts.reached(seq, part: part.index, progress: unsafeProgress)
                        }
                        let lists = ChangeLists(postings)
                        // Only the state at `last` is wanted: the others are freed here, on
                        // their own core, rather than one after the other at the end.
                        return (lists, lists.last == last ? partState : nil)
                    }
                    switch result {
                    case .success: parts.finished(part: part.index)
                    case .failure: parts.stop()
                    }
                    folded.withLock { $0.append((part.index, result)) }
                }
            }
        }
        // Each part is taken once, so its index is in `folded` once.
        let results = folded.withLock { Dictionary(uniqueKeysWithValues: $0.map { ($0.index, $0.result) }) }
        for case .failure(let error) in results.values { throw error }
        var covered: [ChangeLists] = []
        for part in parts.partsInOrder {
            guard case .success(let done)? = results[part.index] else { break }
            covered.append(done.lists)
            if let end = done.state { state = end }
            // A part `stop` ended early: the lists cover what precedes it, up to where it ended.
            guard done.lists.last == part.end else { break }
        }
        let lists = ChangeLists.joining(covered)
        guard lists.last == last || stop?() == true else {
            throw StoreError(.storage, "the change index's parts cover \(first)…\(lists.last.map(String.init) ?? "nothing") of \(first)…\(last)")
        }
        return lists
    }
}
