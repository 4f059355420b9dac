import ReelCore
import ReelJSON
import ReelStorage

/// A read-only view over a data directory and a reducer: the state at any seq, what changed between
/// two seqs, what-if replays and filtered history. Used by the daemon's time-travel methods and by
/// `reel`, live or offline; every call runs on its own read transactions and never blocks a writer.
///
/// The entry points carry `@_specialize(where State == JSONValue)`: the stock store's state. Its
/// callers live in other modules, which cannot specialize this module's generic code, so without it
/// every replay of the stock store ran unspecialized, handling the state through value witnesses
/// (`reel-bench` replay of `patch` actions: 1.25–1.35 → 2.0–2.1 M actions/s). Everything these call
/// in this module is specialized with them; other state types take the generic path, as before.
public struct Timeline<State: StoreState>: Sendable {
    public let directory: DataDirectory
    public let definition: StoreDefinition<State>
    var fold: Fold<State> { Fold(definition: definition) }
    /// A range past the change index shorter than twice this is replayed in one walk, a longer
    /// one in parts on every core (``replayParts(after:through:)``): a part costs a checkpoint's
    /// load. Smaller in tests, to have short histories cut into parts.
    var replayPartMinimum: UInt64 = 32_768

    public init(directory: DataDirectory, definition: StoreDefinition<State>) {
        self.directory = directory
        self.definition = definition
    }

    /// The seq of the newest committed action.
    public func latestSeq() throws(StoreError) -> UInt64 {
        do { return try directory.latestSeq() } catch { throw StoreError(error) }
    }

    /// Where this history starts: seq 0 and the reducers' initial state, or, in a directory made
    /// from a bundle (``Metadata/origin``), the seq the bundle starts after and its state there.
    /// Nothing before it can be read.
    public func origin() throws(StoreError) -> (seq: UInt64, state: State) {
        let seq = directory.metadata.origin
        guard seq > 0 else { return (0, definition.initialState) }
        return (seq, try state(at: seq))
    }

    /// The state at `seq`: the initial state folded with actions 1…seq (or the origin's state
    /// with the actions after it).
    public func state(at seq: UInt64) throws(StoreError) -> State {
        try reconstruct(at: seq).state
    }

    /// Rebuilds the state at `seq` from the newest usable checkpoint at or before it, and says how.
    ///
    /// - Throws: ``StoreError`` `.seqOutOfRange` beyond the latest seq, `.storage` on a read failure.
    public func reconstruct(at seq: UInt64) throws(StoreError) -> Reconstruction<State> {
        try reconstruct(at: seq, progress: nil)
    }

    /// ``reconstruct(at:)``, calling `progress` with the seq reached every 65,536 actions replayed
    /// (for a long replay at open: the daemon logs it and tells systemd).
    @_specialize(where State == JSONValue)
    public func reconstruct(at seq: UInt64, progress: ((_ replayedThrough: UInt64) -> Void)?) throws(StoreError) -> Reconstruction<State> {
        let latest = try latestSeq()
        guard seq <= latest else {
            throw StoreError(.seqOutOfRange, "seq \(seq) is beyond the latest seq \(latest)")
        }
        try checkNotBeforeOrigin(seq)
        let found: (checkpoint: Checkpoint?, skipped: [SkippedCheckpoint])
        do {
            found = try directory.newestCheckpoint(atOrBefore: seq, reducer: definition.identity)
        } catch {
            throw StoreError(error)
        }
        var result = Reconstruction(
            seq: seq, state: definition.initialState, checkpointSeq: nil,
            skippedCheckpoints: found.skipped.map { ($0.seq, $0.reason) }, replayed: 0, refused: []
        )
        result.damagedCheckpoints = found.skipped.filter(\.isDamaged).map(\.seq)
        if let checkpoint = found.checkpoint {
            do {
                result.state = try State(jsonValue: try checkpoint.state(checkingHash: false))
                result.checkpointSeq = checkpoint.seq
                result.checkpointBytes = checkpoint.stateBytes.count
            } catch {
                // A checkpoint that decodes as JSON but not as `State` means the state type changed
                // without a version bump: fall back to replaying everything.
                result.skippedCheckpoints.append((checkpoint.seq, "it does not decode as the current state: \(error)"))
            }
        }
        let start = (result.checkpointSeq ?? 0) + 1
        try replay(from: start, through: seq, into: &result, skipping: [], progress: progress)
        return result
    }

    /// Refuses a seq before the one this history starts after (a directory made from a bundle).
    func checkNotBeforeOrigin(_ seq: UInt64) throws(StoreError) {
        let origin = directory.metadata.origin
        guard seq < origin else { return }
        throw StoreError(
            .seqOutOfRange,
            "seq \(seq) is before this history's start: it holds the state at seq \(origin) and the actions after it (a bundle's slice)"
        )
    }

    /// The state at `seq`, going on from `folded` (a state this timeline's reducers folded at an
    /// earlier seq of this log) when there is one, else as ``reconstruct(at:progress:)`` does.
    @_specialize(where State == JSONValue)
    public func reconstruct(
        at seq: UInt64, continuing folded: FoldedState<State>?, progress: ((UInt64) -> Void)? = nil
    ) throws(StoreError) -> Reconstruction<State> {
        guard let folded else { return try reconstruct(at: seq, progress: progress) }
        guard folded.seq <= seq else {
            throw StoreError(.seqOutOfRange, "the folded state is at seq \(folded.seq), beyond the log's latest seq \(seq)")
        }
        var result = Reconstruction(seq: seq, state: folded.state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: [])
        try replay(from: folded.seq + 1, through: seq, into: &result, skipping: [], progress: progress)
        return result
    }

    /// Folds actions `first...last` into `result.state`, leaving out `skipped`; `visit`, if any,
    /// sees each action folded and how the reducers took it (`nil`: accepted).
    @_specialize(where State == JSONValue)
    func replay(
        from first: UInt64, through last: UInt64, into result: inout Reconstruction<State>, skipping: Set<UInt64>,
        progress: ((UInt64) -> Void)? = nil, visit: ((ActionEnvelope, StoreError?) -> Void)? = nil
    ) throws(StoreError) {
        guard first <= last else { return }
        let fold = self.fold
        var state = result.state
        var replayed = 0
        var refused: [(UInt64, String)] = []
        do {
            // What `visit` sees is each action as logged: read whole for it.
            try directory.forEachLoggedActionReadingAhead(from: first, through: last, preparing: visit == nil && fold.prepares) { envelope, prepared in
                let seq = envelope.seq
                if !skipping.isEmpty, skipping.contains(seq) { return true }
                do {
                    try fold.apply(envelope, prepared: prepared, to: &state) { (to: UInt64) throws(StoreError) -> State in
                        try whatIfState(at: to, skipping: skipping)
                    }
                    visit?(envelope, nil)
                } catch let error as StoreError where error.code == .rejected || error.code == .unknownActionType {
                    refused.append((seq, error.message))
                    visit?(envelope, error)
                }
                replayed += 1
                if let progress, replayed & 0xFFFF == 0 { progress(seq) }
                return true
            }
        } catch {
            throw StoreError.walking(error, "replay")
        }
        result.state = state
        result.replayed += replayed
        result.refused += refused
    }

    /// The state at `seq` as if the actions in `skipping` had never been dispatched.
    func whatIfState(at seq: UInt64, skipping: Set<UInt64>) throws(StoreError) -> State {
        guard let firstSkipped = skipping.filter({ $0 <= seq }).min() else {
            return try state(at: seq)
        }
        // Everything before the first skipped action is the real history: start from it.
        var result = try reconstruct(at: firstSkipped - 1)
        try replay(from: firstSkipped, through: seq, into: &result, skipping: skipping)
        return result.state
    }
}
