import Dispatch
import ReelCore
import ReelJSON
import ReelStorage
import Synchronization

/// What changed some paths where the change index does not answer (past it, or without one: a
/// log `reel import` made, or a store run with the index off), worked out by replaying: a long
/// range is cut at checkpoints into parts that the cores fold at once, each from the state at its
/// start, taken in the order asked, so that a question the first parts answer (the first or the
/// newest `n` changes, a blame whose leaves all changed lately) stops there.
extension Timeline {
    /// The seqs in `from…through` whose action changed the value at `path`, oldest first (or
    /// newest first), the first `want` of them (newest first, perhaps more), by replaying.
    @_specialize(where State == JSONValue)
    func replayedChanges(
        of path: JSONPointer, from: UInt64, through: UInt64, newestFirst: Bool = false, want: Int = .max
    ) throws(StoreError) -> [UInt64] {
        guard from <= through else { return [] }
        var parts = try replayParts(after: from - 1, through: through)
        if newestFirst { parts.reverse() }
        var found: [UInt64] = []
        // Oldest first, a part can stop at its `want`th change: whatever the parts before it
        // found, the answer is among those and these.
        try forEachPart(of: parts, paths: [path], limit: newestFirst ? nil : want) { changes in
            found += newestFirst ? changes[0].reversed() : changes[0]
            return found.count < want
        }
        return newestFirst || found.count <= want ? found : Array(found.prefix(want))
    }

    /// For each path, the newest seq in `after + 1…through` that changed it, or `nil`, by replaying
    /// from the newest part back, until every path has one.
    @_specialize(where State == JSONValue)
    func newestReplayedChanges(of paths: [JSONPointer], after: UInt64, through: UInt64) throws(StoreError) -> [UInt64?] {
        var newest = [UInt64?](repeating: nil, count: paths.count)
        guard after < through, !paths.isEmpty else { return newest }
        var open = Array(paths.indices)
        try forEachPart(of: try replayParts(after: after, through: through).reversed(), paths: paths) { changes in
            // The parts newest first: a path's first change found is its newest.
            for index in open { newest[index] = changes[index].last }
            open.removeAll { newest[$0] != nil }
            return !open.isEmpty
        }
        return newest
    }

    /// `after + 1…through` as parts of about equal length cut at this reducer's checkpoints, two
    /// per core (so that a core whose part ends early has another), each as the seq whose state it
    /// starts from and the last seq it folds. One part for a short range, or with no checkpoint
    /// inside it.
    func replayParts(after: UInt64, through: UInt64) throws(StoreError) -> [ClosedRange<UInt64>] {
        let count = UInt64(2 * Self.changeIndexBuildThreads)
        guard through > after, count > 1, through - after >= 2 * replayPartMinimum else { return [after...through] }
        let checkpoints: [UInt64]
        do {
            checkpoints = try directory.checkpointSeqs(from: after + 1, through: through - 1, reducer: definition.identity)
        } catch {
            throw StoreError(error)
        }
        let length = max((through - after) / count, replayPartMinimum)
        var bounds = [after]
        var next = 0
        for target in stride(from: after + length, to: through, by: Int(length)) {
            // The checkpoint nearest the target, past the last cut.
            while next + 1 < checkpoints.count, checkpoints[next + 1] <= target { next += 1 }
            let candidates = checkpoints[next..<min(next + 2, checkpoints.count)].filter { $0 > bounds.last! }
            guard let cut = candidates.min(by: { $0.distance(to: target).magnitude < $1.distance(to: target).magnitude }) else { continue }
            bounds.append(cut)
        }
        bounds.append(through)
        return zip(bounds, bounds.dropFirst()).map { $0...$1 }
    }

    /// Folds `parts`, as many at once as there are cores, each core taking the next part not
    /// taken, and hands each part's changes to `body` in the order of `parts` (for each path, the
    /// seqs that changed it, oldest first), until it returns `false`: then no part is started,
    /// and the ones being folded stop where they are.
    private func forEachPart(
        of parts: [ClosedRange<UInt64>], paths: [JSONPointer], limit: Int? = nil, _ body: ([[UInt64]]) -> Bool
    ) throws(StoreError) {
        let workers = min(Self.changeIndexBuildThreads, parts.count)
        guard workers > 1 else {
            for part in parts {
                guard body(try changes(in: part, of: paths, limit: limit, stop: nil)) else { return }
            }
            return
        }
        let board = Mutex(ReplayPartsBoard())
        let stopped: @Sendable () -> Bool = { board.withLock { $0.stopped } }
        let timeline = self
        // `body` runs under the board's lock, one part at a time, in order, on whichever thread
        // finished the part that lets it go on.
        nonisolated(unsafe) let body = body
        DataDirectory.withWalksOccupying(workers) {
            DispatchQueue.concurrentPerform(iterations: workers) { _ in
                while let index = board.withLock({ board -> Int? in
                    guard !board.stopped, board.next < parts.count else { return nil }
                    defer { board.next += 1 }
                    return board.next
                }) {
                    let result = Result { () throws(StoreError) in try timeline.changes(in: parts[index], of: paths, limit: limit, stop: stopped) }
                    board.withLock { board in
                        board.finished[index] = result
                        while !board.stopped, let done = board.finished.removeValue(forKey: board.handed) {
                            board.handed += 1
                            switch done {
                            case .success(let changes): if !body(changes) { board.stopped = true }
                            case .failure(let error): (board.failure, board.stopped) = (error, true)
                            }
                        }
                    }
                }
            }
        }
        if let failure = board.withLock({ $0.failure }) { throw failure }
    }

    /// For each of `paths`, the seqs of `part` (folded from the state at its lower bound through
    /// its upper) that changed it: the first `limit` of them (of the first path, the one a limit
    /// is for) when given. Checks `stop` every 1,024 actions, and ends early (with changes
    /// covering less) when it says so.
    @_specialize(where State == JSONValue)
    private func changes(
        in part: ClosedRange<UInt64>, of paths: [JSONPointer], limit: Int?, stop: (() -> Bool)?
    ) throws(StoreError) -> [[UInt64]] {
        var walk = ChangeWalk(timeline: self)
        try walk.move(to: part.lowerBound)
        var seqs = [[UInt64]](repeating: [], count: paths.count)
        try walk.steps(through: part.upperBound, checking: paths) { seq, changes in
            for (index, changed) in changes.enumerated() where changed { seqs[index].append(seq) }
            if let limit, seqs[0].count >= limit { return false }
            return seq & 1_023 != 0 || stop?() != true
        }
        return seqs
    }
}

/// Which of a replay's parts are taken, folded and handed on (``Timeline/forEachPart(of:paths:limit:_:)``).
private struct ReplayPartsBoard {
    var next = 0
    var finished: [Int: Result<[[UInt64]], StoreError>] = [:]
    /// Parts handed to the caller so far.
    var handed = 0
    var stopped = false
    var failure: StoreError?
}
