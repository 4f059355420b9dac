import ReelCore
import ReelJSON
import ReelStorage

/// A maximal run of seqs at which a condition holds (within the window searched).
public struct SeqRange: Sendable, Equatable {
    public var from: UInt64
    /// The last seq of the run; `nil` when the condition still holds at the latest seq.
    public var to: UInt64?

    public init(from: UInt64, to: UInt64?) {
        self.from = from
        self.to = to
    }
}

/// The outcome of ``Timeline/find(from:to:limit:progress:where:)``.
public struct FindResult: Sendable, Equatable {
    /// The runs, oldest first.
    public var ranges: [SeqRange]
    /// Where to go on after `limit` runs: the `from` of the next call; `nil` when the window is done.
    public var next: UInt64?
    /// The last seq searched.
    public var through: UInt64
    /// How many actions were folded (from the checkpoint before `from`).
    public var actionsReplayed: Int
}

extension Timeline {
    /// Every run of seqs in `from…to` at which `condition` holds: `bisect` without its
    /// assumption that, once true, the condition stays true.
    ///
    /// The state at `from` is rebuilt from the nearest checkpoint, then every action after it is
    /// folded once and the condition asked of the state after it. Runs are clipped to the window:
    /// one that holds at `from` starts there, one that holds at `to` ends there (and has no end
    /// when `to` is the latest seq).
    ///
    /// - Parameters:
    ///   - from: The first seq (1 or more).
    ///   - to: The last seq; `nil` for the latest.
    ///   - limit: The most runs to return; the rest is a `next` call away.
    ///   - progress: Called now and then with the seq reached.
    ///   - condition: Asked of the state written as JSON.
    /// - Throws: ``StoreError`` `.seqOutOfRange` for `from` or `to` beyond the latest, or `from`
    ///   past `to`; `.storage`.
    @_specialize(where State == JSONValue)
    public func find(
        from: UInt64 = 1, to: UInt64? = nil, limit: Int = 100, progress: ((UInt64) -> Void)? = nil,
        where condition: (JSONValue) -> Bool
    ) throws(StoreError) -> FindResult {
        let (first, last, latest) = try findWindow(from: from, to: to)
        var result = FindResult(ranges: [], next: nil, through: last, actionsReplayed: 0)
        let start = try reconstruct(at: first - 1)
        result.actionsReplayed = start.replayed
        var state = start.state
        var open: UInt64?  // the start of the run the last seq is in
        let fold = self.fold
        do {
            try directory.forEachEnvelopeReadingAhead(from: first, through: last) { envelope in
                do {
                    try fold.apply(envelope, to: &state) { (to: UInt64) throws(StoreError) -> State in
                        try self.state(at: to)
                    }
                } catch let error as StoreError where error.code == .rejected || error.code == .unknownActionType {
                    // A logged action today's reducers refuse leaves the state as it was, as in any replay.
                }
                result.actionsReplayed += 1
                if let progress, result.actionsReplayed & 0xFFFF == 0 { progress(envelope.seq) }
                let holds = condition(try state.jsonValueOrThrow(seq: envelope.seq))
                if holds, open == nil {
                    open = envelope.seq
                } else if !holds, let runStart = open {
                    result.ranges.append(SeqRange(from: runStart, to: envelope.seq - 1))
                    open = nil
                    if result.ranges.count >= limit, envelope.seq < last {
                        result.next = envelope.seq + 1
                        result.through = envelope.seq
                        return false
                    }
                }
                return true
            }
        } catch {
            throw StoreError.walking(error, "find")
        }
        if let runStart = open {
            result.ranges.append(SeqRange(from: runStart, to: last == latest ? nil : last))
        }
        return result
    }

    /// `find`'s window: `from` (at least the history's first seq: 1, or a bundle's origin + 1)
    /// through `to` (the latest seq when `nil`), and the latest seq.
    func findWindow(from: UInt64, to: UInt64?) throws(StoreError) -> (first: UInt64, last: UInt64, latest: UInt64) {
        let latest = try latestSeq()
        let last = to ?? latest
        guard last <= latest else { throw StoreError(.seqOutOfRange, "seq \(last) is beyond the latest seq \(latest)") }
        let first = max(from, directory.metadata.origin + 1)
        guard first <= last else {
            guard first <= latest else { throw StoreError(.seqOutOfRange, "seq \(first) is beyond the latest seq \(latest)") }
            throw StoreError(.seqOutOfRange, "from (\(first)) is past to (\(last))")
        }
        return (first, last, latest)
    }
}
