import ReelCore
import ReelJSON
import ReelStorage

/// The outcome of ``Timeline/bisect(through:progress:where:)``.
public struct BisectResult: Sendable, Equatable {
    /// The first seq at which the condition holds; `nil` when it does not hold at the last seq.
    public var seq: UInt64?
    /// The last seq considered (the latest unless the caller chose an earlier one).
    public var through: UInt64
    /// How many states the condition was evaluated on: O(log n) in the length of the log.
    public var probes: Int
    /// How many actions were folded to compute them (not counting checkpoint loads).
    public var actionsReplayed: Int
}

extension Timeline {
    /// Finds the first seq at which `condition` holds, by binary search (like `git bisect`).
    ///
    /// The search assumes the condition, once true, stays true up to `through`; when it flips
    /// back and forth, the answer is still a seq where it holds with the seq before it not
    /// holding, but not necessarily the earliest such seq. It holds at 0 when it holds in the
    /// initial state.
    ///
    /// It costs O(log n) condition evaluations: first over the checkpoints, whose states load
    /// without replaying anything, then inside the interval between two checkpoints, where each
    /// probe replays forward from the last state known not to hold — so the actions folded add
    /// up to at most about twice the checkpoint interval.
    ///
    /// - Parameters:
    ///   - through: The last seq to consider; `nil` for the latest.
    ///   - progress: Called after each probe with (probes so far, an estimate of the total).
    ///   - condition: Evaluated on the state written as JSON.
    /// - Throws: ``StoreError`` `.seqOutOfRange` for a `through` beyond the latest, `.storage`.
    @_specialize(where State == JSONValue)
    public func bisect(
        through: UInt64? = nil, progress: (Int, Int) -> Void = { _, _ in },
        where condition: (JSONValue) -> Bool
    ) throws(StoreError) -> BisectResult {
        let latest = try latestSeq()
        let last = through ?? latest
        guard last <= latest else {
            throw StoreError(.seqOutOfRange, "seq \(last) is beyond the latest seq \(latest)")
        }
        var result = BisectResult(seq: nil, through: last, probes: 0, actionsReplayed: 0)
        // Known points: the history's start (seq 0, or a bundle's origin), every checkpoint of this
        // reducer in between, and `last`.
        let origin = try self.origin()
        var points: [UInt64] = [origin.seq]
        do {
            points += try directory.checkpointHeaders()
                .filter { $0.reducer == definition.identity && $0.seq > origin.seq && $0.seq < last }
                .map(\.seq)
        } catch {
            throw StoreError(error)
        }
        if last > origin.seq { points.append(last) }
        let estimate = Self.log2Ceiling(points.count) + Self.log2Ceiling(Int(clamping: last / UInt64(points.count))) + 2

        func holds(_ state: State, at seq: UInt64) throws(StoreError) -> Bool {
            result.probes += 1
            progress(result.probes, max(estimate, result.probes))
            return condition(try state.jsonValueOrThrow(seq: seq))
        }

        let lastState = try reconstructCounting(at: last, into: &result)
        guard try holds(lastState, at: last) else { return result }
        guard last > origin.seq, !(try holds(origin.state, at: origin.seq)) else {
            result.seq = origin.seq
            return result
        }
        // Binary search over the points: it holds at points[high], not at points[low].
        var low = 0
        var high = points.count - 1
        var lowState = origin.state
        while high - low > 1 {
            let middle = (low + high) / 2
            let state = try reconstructCounting(at: points[middle], into: &result)
            if try holds(state, at: points[middle]) {
                high = middle
            } else {
                low = middle
                lowState = state
            }
        }
        // Binary search between the two points, replaying forward from the low side.
        var lowSeq = points[low]
        var highSeq = points[high]
        while highSeq - lowSeq > 1 {
            let middle = lowSeq + (highSeq - lowSeq) / 2
            var state = lowState
            try foldCounting(from: lowSeq + 1, through: middle, into: &state, result: &result)
            if try holds(state, at: middle) {
                highSeq = middle
            } else {
                lowSeq = middle
                lowState = state
            }
        }
        result.seq = highSeq
        return result
    }

    private func reconstructCounting(at seq: UInt64, into result: inout BisectResult) throws(StoreError) -> State {
        let reconstruction = try reconstruct(at: seq)
        result.actionsReplayed += reconstruction.replayed
        return reconstruction.state
    }

    private func foldCounting(
        from first: UInt64, through last: UInt64, into state: inout State, result: inout BisectResult
    ) throws(StoreError) {
        var reconstruction = Reconstruction(
            seq: last, state: state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: []
        )
        try replay(from: first, through: last, into: &reconstruction, skipping: [])
        state = reconstruction.state
        result.actionsReplayed += reconstruction.replayed
    }

    private static func log2Ceiling(_ value: Int) -> Int {
        value <= 1 ? 0 : Int.bitWidth - (value - 1).leadingZeroBitCount
    }
}
