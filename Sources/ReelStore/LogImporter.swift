import ReelCore
import ReelJSON
import ReelStorage

/// Builds a new data directory from exported actions (`reel import`): appends each action with
/// its original seq, time and peer, folds it with the reducers as the writer would have, and
/// writes checkpoints on the way and at the end.
///
/// The target must be new or empty: an import never mixes with an existing history. Seqs must
/// run 1, 2, 3, … without gaps, because a log that does not start at 1 has no known state to
/// start from; or, given a state to start from (`options.storage.origin`, a bundle's), from the
/// seq after it. An action the reducers refuse stops the import: the export was made with other
/// reducers, and the new directory would not replay to the same state.
///
/// ```swift
/// let importer = try LogImporter(path: "restored", definition: .stock)
/// for envelope in exported { try importer.append(envelope) }
/// let report = try importer.finish()
/// ```
public final class LogImporter<State: StoreState> {
    /// Actions committed per transaction: large enough to amortize the sync, small enough to keep
    /// memory flat on logs of any length.
    public static var actionsPerCommit: Int { 4_096 }

    public let timeline: Timeline<State>
    private let fold: Fold<State>
    /// The state the actions appended so far folded into.
    public private(set) var state: State
    private var seq: UInt64 = 0
    /// Actions encoded as the log stores them (weighed as they come, for checkpoint spacing) and
    /// checkpoints, not committed yet.
    private var pendingRecords = LogRecords()
    private var pendingCheckpoints: [Checkpoint] = []
    private var spacing: CheckpointSpacing
    private var checkpointsWritten = 0

    /// Creates the data directory at `path`.
    ///
    /// - Throws: ``StoreError`` `.invalidArgument` when the directory already holds actions,
    ///   `.storage` when it cannot be created.
    public init(path: String, definition: StoreDefinition<State>, options: StoreOptions = StoreOptions()) throws(StoreError) {
        var storage = options.storage
        storage.readOnly = false
        let directory: DataDirectory
        do {
            directory = try DataDirectory(path: path, reducerName: definition.identity.name, options: storage)
        } catch {
            throw StoreError(error)
        }
        timeline = Timeline(directory: directory, definition: definition)
        let origin = directory.metadata.origin
        if let wanted = storage.origin, wanted.seq != origin {
            throw StoreError(.invalidArgument, "\(path) is a data directory already: a history starting after seq \(wanted.seq) is imported only into a new one")
        }
        let existing = try timeline.latestSeq()
        guard existing == origin else {
            throw StoreError(.invalidArgument, "\(path) already holds \(existing - origin) actions: import only into a new or empty data directory")
        }
        spacing = CheckpointSpacing(options: options, lastSeq: origin)
        fold = Fold(definition: definition)
        (seq, state) = try timeline.origin()
    }

    /// The seq of the last action appended.
    public var latestSeq: UInt64 { seq }

    /// Folds and queues one exported action.
    ///
    /// - Parameter keepingRefused: log an action the reducers refuse all the same, leaving the
    ///   state as it was (as a replay takes it), and return the refusal; otherwise it is thrown.
    /// - Throws: ``StoreError`` `.invalidArgument` for a seq out of order, `.rejected` or
    ///   `.unknownActionType` (with the seq) when the reducers refuse it, `.storage`.
    @_specialize(where State == JSONValue)
    @discardableResult
    public func append(_ envelope: ActionEnvelope, keepingRefused: Bool = false) throws(StoreError) -> StoreError? {
        var one = EncodedActions()
        one.append(envelope)
        return try one.records.withRecord(at: 0) { (record) throws(StoreError) in
            try append(record: record, seq: envelope.seq, keepingRefused: keepingRefused)
        }
    }

    /// Folds and queues the actions of `actions` (encoded ahead, ``EncodedActions``) in order, as
    /// ``append(_:keepingRefused:)`` does each, an action the reducers refuse thrown: read back
    /// from their records as a replay reads them. When it throws, the actions before the one it
    /// throws for are queued (``latestSeq`` is the last of them).
    @_specialize(where State == JSONValue)
    public func append(contentsOf actions: EncodedActions) throws(StoreError) {
        try actions.records.forEach { (seq, record) throws(StoreError) in
            try append(record: record, seq: seq, keepingRefused: false)
        }
    }

    private func append(record: UnsafeRawBufferPointer, seq recordSeq: UInt64, keepingRefused: Bool) throws(StoreError) -> StoreError? {
        guard recordSeq == seq + 1 else {
            throw StoreError(
                .invalidArgument,
                seq == 0 && recordSeq > 1 && timeline.directory.metadata.origin == 0
                    ? "the export starts at seq \(recordSeq): an import needs the whole log from seq 1"
                    : "seq \(recordSeq) follows seq \(seq): the exported actions must be consecutive"
            )
        }
        // The commonest actions applied without their envelope (a refusal is worded below).
        if fold.prepares, let prepared = EnvelopeCodec.preparedStockAction(seq: recordSeq, from: record),
            fold.applyPrepared(prepared, to: &state)
        {
            try queue(record, seq: recordSeq)
            return nil
        }
        var prepared: PreparedStockAction?
        let envelope: ActionEnvelope
        do {
            envelope = try EnvelopeCodec.decode(seq: recordSeq, from: record, acceptingLegacy: false, preparing: fold.prepares, into: &prepared)
        } catch {
            throw StoreError(error)
        }
        // `@revert` reads the state it restores from committed history: commit what is queued.
        if envelope.action.isReserved { try flush() }
        var refusal: StoreError?
        do {
            try fold.apply(envelope, prepared: prepared, to: &state) { (to: UInt64) throws(StoreError) -> State in try timeline.state(at: to) }
        } catch {
            refusal = StoreError(error.code, "action \(envelope.seq) (\(envelope.type)) is refused by \(timeline.definition.identity): \(error.message)")
            guard keepingRefused, error.code == .rejected || error.code == .unknownActionType else { throw refusal! }
        }
        try queue(record, seq: recordSeq)
        return refusal
    }

    /// Queues the record of the action just folded, and the checkpoint and commit due after it.
    private func queue(_ record: UnsafeRawBufferPointer, seq recordSeq: UInt64) throws(StoreError) {
        seq = recordSeq
        pendingRecords.append(seq: recordSeq, record: record)
        spacing.logged(bytes: record.count)
        if spacing.isDue(at: seq) {
            try queueCheckpoint()
        }
        if pendingRecords.count >= Self.actionsPerCommit { try flush() }
    }

    /// Commits the rest and writes a checkpoint at the last seq.
    @_specialize(where State == JSONValue)
    public func finish() throws(StoreError) -> (seq: UInt64, checkpoints: Int) {
        if seq > spacing.lastSeq { try queueCheckpoint() }
        try flush()
        return (seq, checkpointsWritten)
    }

    /// Flushes what the import wrote to the disk, for an importer opened with
    /// `options.storage.durable` false (no sync at each commit): once, after ``finish()``.
    public func sync() throws(StoreError) {
        do {
            try timeline.directory.sync()
        } catch {
            throw StoreError(error)
        }
    }

    private func queueCheckpoint() throws(StoreError) {
        let json = try state.jsonValueOrThrow(seq: seq)
        let checkpoint = Checkpoint(seq: seq, reducer: timeline.definition.identity, time: .now(), state: json)
        pendingCheckpoints.append(checkpoint)
        spacing.checkpointed(at: seq)
        spacing.encoded(stateBytes: checkpoint.stateBytes.count)
    }

    private func flush() throws(StoreError) {
        do {
            try timeline.directory.commit(encodedRecords: pendingRecords, checkpoints: pendingCheckpoints)
        } catch {
            throw StoreError(error)
        }
        checkpointsWritten += pendingCheckpoints.count
        pendingRecords.removeAll(keepingCapacity: true)
        pendingCheckpoints.removeAll()
    }
}
