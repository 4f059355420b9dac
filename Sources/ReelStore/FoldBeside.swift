import ReelCore
import ReelStorage

/// A state at a seq of a log, folded with a definition's reducers.
public struct FoldedState<State: StoreState>: Sendable {
    public var seq: UInt64
    public var state: State

    public init(seq: UInt64, state: State) {
        self.seq = seq
        self.state = state
    }
}

/// This program's reducers folding a data directory that another daemon serves, the first step
/// of taking it over without downtime (`serve --take-over`): the history is folded here, from
/// this version's newest checkpoint or from the start, while the other keeps dispatching, and
/// then followed commit by commit, so that the store this process opens once the other has
/// handed over replays only the last few actions (``Store/init(path:definition:options:logger:continuing:)``).
///
/// The directory is open read-only meanwhile (safe beside its daemon) and reads what LMDB holds:
/// the running daemon's last few milliseconds of actions, still in its journal, are left to the
/// store's open. ``finish()`` closes it: a process may hold a directory only once.
public final class FoldBeside<State: StoreState> {
    public let definition: StoreDefinition<State>
    private var timeline: Timeline<State>?
    public private(set) var folded: FoldedState<State>
    /// Logged actions these reducers refused while folding (each left the state as it was).
    public private(set) var refused: [(seq: UInt64, reason: String)] = []
    /// How many actions were folded, in all.
    public private(set) var replayed = 0

    /// Opens `path` read-only and folds its log through the latest seq LMDB holds.
    ///
    /// - Parameter progress: Called now and then with the seq reached and the seq aimed at.
    /// - Throws: ``StoreError``: `.storage` (no store there, another reducer's, damaged),
    ///   `.unreadableHistory` (actions these reducers cannot read: refused before any folding).
    public init(path: String, definition: StoreDefinition<State>, progress: ((UInt64, UInt64) -> Void)? = nil) throws(StoreError) {
        self.definition = definition
        let directory: DataDirectory
        do {
            directory = try DataDirectory(path: path, reducerName: definition.identity.name, options: .init(readOnly: true))
        } catch {
            throw StoreError(error)
        }
        try Store.checkReadable(directory: directory, definition: definition)
        let timeline = Timeline(directory: directory, definition: definition)
        let latest: UInt64
        do {
            latest = try directory.latestSeqInLMDB()
        } catch {
            throw StoreError(error)
        }
        let restored = try timeline.reconstruct(at: latest) { reached in progress?(reached, latest) }
        self.timeline = timeline
        folded = FoldedState(seq: restored.seq, state: restored.state)
        refused = restored.refused
        replayed = restored.replayed
    }

    /// Folds what the serving daemon committed since the last call.
    ///
    /// - Returns: How many actions were folded.
    @discardableResult
    public func catchUp() throws(StoreError) -> UInt64 {
        guard let timeline else { throw StoreError(.shuttingDown, "the fold beside is finished") }
        let latest: UInt64
        do {
            latest = try timeline.directory.latestSeqInLMDB()
        } catch {
            throw StoreError(error)
        }
        guard latest > folded.seq else { return 0 }
        var result = Reconstruction(seq: latest, state: folded.state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: [])
        try timeline.replay(from: folded.seq + 1, through: latest, into: &result, skipping: [])
        let count = latest - folded.seq
        folded = FoldedState(seq: latest, state: result.state)
        refused += result.refused
        replayed += result.replayed
        return count
    }

    /// Closes the directory and returns the state folded.
    public func finish() -> FoldedState<State> {
        timeline = nil
        return folded
    }
}
