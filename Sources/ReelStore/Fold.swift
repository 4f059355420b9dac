import ReelCore
import ReelJSON
import ReelStorage

/// Folds logged actions into state: the reducers for ordinary actions, the store itself for
/// reserved ones (`@revert`). The writer (at dispatch) and the timeline (at replay) share it, so a
/// replay computes exactly what the writer computed.
struct Fold<State: StoreState>: Sendable {
    let definition: StoreDefinition<State>

    /// Applies one action.
    ///
    /// - Parameters:
    ///   - envelope: the action.
    ///   - state: the state before; after, on success. Unchanged when this throws (reducers honour
    ///     that; the writer also restores multi-action batches itself).
    ///   - stateAt: the state at an earlier seq, for `@revert`.
    func apply(
        _ envelope: ActionEnvelope, to state: inout State, stateAt: (UInt64) throws(StoreError) -> State
    ) throws(StoreError) {
        let storeAction: StoreAction?
        do {
            storeAction = try StoreAction(envelope.action)
        } catch {
            throw StoreError(error)
        }
        switch storeAction {
        case .revert(let to)?:
            guard to < envelope.seq else {
                throw StoreError(.seqOutOfRange, "@revert to \(to) at seq \(envelope.seq): only earlier seqs can be restored")
            }
            state = try stateAt(to)
        case nil:
            // No defensive copy here: reducers leave the state unchanged when they throw (the
            // `Reducer` contract), and a copy per action would make every replay step copy the root.
            do {
                // Passed on as it is when nothing is to upcast: `upcast`'s result is a copy (a
                // retain of each of its members, released after), 2% of a replay.
                if needsUpcast(envelope) {
                    try definition.reducer.reduce(into: &state, action: try upcast(envelope))
                } else {
                    try definition.reducer.reduce(into: &state, action: envelope)
                }
            } catch {
                throw StoreError(error)
            }
        }
    }

    /// Whether replays read the records of this definition's commonest actions into prepared
    /// actions (``PreparedStockAction``): its reducer is the stock one
    /// (``StoreDefinition/applyPrepared``) and no type has versions to upcast.
    var prepares: Bool { definition.applyPrepared != nil && definition.versions.isEmpty }

    /// Applies one action read from the log (``DataDirectory/forEachLoggedAction(from:through:preparing:_:)``):
    /// a prepared one as the reducers would (``StoreDefinition/applyPrepared``), or, when that
    /// refuses it and for every other one, as ``apply(_:to:stateAt:)`` applies its envelope (which
    /// says why the reducers refuse it).
    func apply(
        _ envelope: ActionEnvelope, prepared: PreparedStockAction?, to state: inout State, stateAt: (UInt64) throws(StoreError) -> State
    ) throws(StoreError) {
        guard let prepared else {
            try apply(envelope, to: &state, stateAt: stateAt)
            return
        }
        if let applyPrepared = definition.applyPrepared, applyPrepared(&state, prepared) { return }
        try apply(prepared.filling(envelope), to: &state, stateAt: stateAt)
    }

    /// Applies `prepared` as the reducers would (``StoreDefinition/applyPrepared``): `true`.
    /// `false`, with `state` unchanged, when they would refuse it or read nothing prepared: the
    /// caller then applies its envelope, which says why.
    func applyPrepared(_ prepared: PreparedStockAction, to state: inout State) -> Bool {
        guard prepares, let applyPrepared = definition.applyPrepared else { return false }
        return applyPrepared(&state, prepared)
    }

    /// `envelope` as the reducers read it: its payload upcast from the version it was logged at
    /// to the latest (``ActionVersions``). The same envelope, unchecked, when no type has versions.
    func upcast(_ envelope: ActionEnvelope) throws(ReducerError) -> ActionEnvelope {
        guard needsUpcast(envelope) else { return envelope }
        return try definition.versions.upcastLogged(envelope)
    }

    /// Whether ``upcast(_:)`` may change `envelope`: some type has versions, or it says its own.
    func needsUpcast(_ envelope: ActionEnvelope) -> Bool {
        !definition.versions.isEmpty || envelope.action.version != nil
    }
}

/// The outcome of rebuilding the state at a seq.
public struct Reconstruction<State: StoreState>: Sendable {
    public var seq: UInt64
    public var state: State
    /// The checkpoint the rebuild started from, or `nil` when it replayed from the start.
    public var checkpointSeq: UInt64?
    /// Checkpoints passed over (another reducer version, or damaged), with the reason.
    public var skippedCheckpoints: [(seq: UInt64, reason: String)]
    /// How many actions were folded after the checkpoint.
    public var replayed: Int
    /// Logged actions the current reducers refused while replaying (their seq and the reason). The
    /// state is left unchanged for them. Empty unless the reducers changed meaning since logging.
    public var refused: [(seq: UInt64, reason: String)]
    /// The seqs of the skipped checkpoints that are damaged (a subset of ``skippedCheckpoints``).
    public var damagedCheckpoints: [UInt64] = []
    /// The size of the checkpoint's encoded state, or 0 without a checkpoint.
    public var checkpointBytes = 0
}

extension Fold {
    /// Applies `envelope` when the definition can predict what it changes
    /// (``StoreDefinition/predictChanges``; the actions ``StoreDefinition/applyRecordingChanges``
    /// takes are applied and recorded in one walk), recording that into `recorder`'s current edit:
    /// `true`. `false`, with nothing applied and the edit empty, when it cannot: the caller
    /// compares the states before and after instead. A throw from the reducers leaves the state
    /// as it was and the edit empty.
    func applyPredictingChanges(
        _ envelope: ActionEnvelope, to state: inout State, recorder: inout JSONChangeRecorder,
        stateAt: (UInt64) throws(StoreError) -> State
    ) throws(StoreError) -> Bool {
        guard needsUpcast(envelope) else {
            return try applyPredictingChanges(read: envelope, to: &state, recorder: &recorder, stateAt: stateAt)
        }
        let read: ActionEnvelope
        do {
            read = try upcast(envelope)
        } catch {
            throw StoreError(error)
        }
        return try applyPredictingChanges(read: read, to: &state, recorder: &recorder, stateAt: stateAt)
    }

    /// ``applyPredictingChanges(_:to:recorder:stateAt:)`` of an action read from the log: a
    /// prepared one applied and recorded in one walk when it can be
    /// (``StoreDefinition/applyPreparedRecordingChanges``), any other as its envelope.
    func applyPredictingChanges(
        _ envelope: ActionEnvelope, prepared: PreparedStockAction?, to state: inout State, recorder: inout JSONChangeRecorder,
        stateAt: (UInt64) throws(StoreError) -> State
    ) throws(StoreError) -> Bool {
        guard let prepared else {
            return try applyPredictingChanges(envelope, to: &state, recorder: &recorder, stateAt: stateAt)
        }
        if definition.predictChanges != nil, let applyRecording = definition.applyPreparedRecordingChanges,
            applyRecording(&state, prepared, &recorder)
        {
            return true
        }
        // Prepared, so nothing to upcast; and what the one walk did not take as prepared, it
        // does not take as an envelope either.
        return try applyPredictingChanges(read: prepared.filling(envelope), to: &state, recorder: &recorder, stateAt: stateAt, inOneWalk: false)
    }

    /// ``applyPredictingChanges(_:to:recorder:stateAt:)`` of an envelope already upcast.
    private func applyPredictingChanges(
        read: ActionEnvelope, to state: inout State, recorder: inout JSONChangeRecorder,
        stateAt: (UInt64) throws(StoreError) -> State, inOneWalk: Bool = true
    ) throws(StoreError) -> Bool {
        // Without a prediction, nothing is recorded on the way: the caller compares.
        if inOneWalk, definition.predictChanges != nil, let applyRecording = definition.applyRecordingChanges, applyRecording(&state, read, &recorder) {
            return true
        }
        guard let predict = definition.predictChanges, predict(state, read, &recorder) else {
            // A prediction that gave up may have recorded part of the action.
            recorder.startEdit()
            return false
        }
        do {
            try apply(read, to: &state, stateAt: stateAt)
        } catch {
            recorder.startEdit()
            throw error
        }
        return true
    }
}
