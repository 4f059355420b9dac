import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTesting

/// The slice `testgen` and `bundle` take: `--from A --to B`, and what to `--redact`.
struct SliceOptions: ParsableArguments {
    @Option(name: .customLong("from"), parsing: .unconditional, help: ArgumentHelp("The first seq of the slice.", valueName: "seq"), transform: SeqArgument.parse)
    var from: SeqArgument
    @Option(name: .customLong("to"), parsing: .unconditional, help: ArgumentHelp("The last seq of the slice.", valueName: "seq"), transform: SeqArgument.parse)
    var to: SeqArgument
    @Option(name: .customLong("redact"), help: ArgumentHelp("Replace the values at this path in the state and the payloads by placeholders (repeatable; * matches any member or index).", valueName: "pointer"))
    var redactions: [String] = []

    /// Checks the range, at most `maxActions` long (`limit` says so), and each pointer.
    func check(maxActions: UInt64, limit: String, paths: [String] = []) throws {
        guard from.value >= 1 else { throw ValidationError("--from must be 1 or more: the slice starts after the state at seq FROM-1") }
        guard from.value <= to.value else { throw ValidationError("--from \(from.value) is after --to \(to.value): no action lies between them") }
        guard to.value - from.value < maxActions else {
            throw ValidationError("--from \(from.value) --to \(to.value) is \(to.value - from.value + 1) actions: \(limit) \(maxActions)")
        }
        for path in paths + redactions {
            do { _ = try JSONPointer(path) } catch { throw ValidationError("'\(path)' is not a JSON Pointer: \(error.message)") }
        }
    }
}

/// A slice of history as a store holds it (`testgen`, `bundle`): the state before its first
/// action, its actions, the state after its last, and the state after each `@revert` in it.
struct HistorySlice: Sendable {
    /// The seq before the first action, and the state recorded there.
    var startSeq: UInt64
    var startState: JSONValue
    var actions: [ActionEnvelope]
    /// The state recorded after the last action.
    var endState: JSONValue
    /// The state recorded after each `@revert` of the slice, by seq.
    var revertedStates: [UInt64: JSONValue]

    /// The last seq of the slice.
    var endSeq: UInt64 { actions.last?.seq ?? startSeq }

    /// Reads the actions after `start` through `end`, and the states around them, from `store`.
    static func read(from store: any StoreSource, after start: UInt64, through end: UInt64) async throws(ToolError) -> HistorySlice {
        let startState = try await store.value(at: start, path: .root).value
        let actions = try await Self.actions(of: store, from: start + 1, through: end)
        var reverted: [UInt64: JSONValue] = [:]
        for envelope in actions where envelope.action.type == StoreAction.revertType {
            reverted[envelope.seq] = try await store.value(at: envelope.seq, path: .root).value
        }
        let endState = try await store.value(at: end, path: .root).value
        return HistorySlice(startSeq: start, startState: startState, actions: actions, endState: endState, revertedStates: reverted)
    }

    /// What this program's reducers make of a slice (a test's expectations, a bundle's changes)
    /// must be what the reducers that recorded it made: a live daemon's, and those of the
    /// checkpoint nearest the slice (the reducer that wrote a data directory stamps its
    /// checkpoints). Other reducers, whose changes a `@revert` or a later action may hide from the
    /// end state's comparison, are refused; `purpose` says what to do with the right program.
    static func checkRecordedBySameReducers(
        _ store: any StoreSource, around slice: ClosedRange<UInt64>, reducer: ReducerIdentity, to purpose: String
    ) async throws {
        let serving = try await store.reducer()
        guard serving == reducer else {
            throw ToolError("\(store.label) folds with \(serving), this program with \(reducer): \(purpose) with the program that recorded the history")
        }
        let checkpoints = try await store.checkpoints()
        let nearest = checkpoints.last { $0.seq < slice.lowerBound } ?? checkpoints.first { $0.seq >= slice.lowerBound }
        if let nearest, nearest.reducer != reducer {
            throw ToolError(
                "the history around seqs \(slice.lowerBound)…\(slice.upperBound) was folded by \(nearest.reducer) (its checkpoint at seq \(nearest.seq)), "
                    + "not by this program's \(reducer): \(purpose) with the program that recorded it"
            )
        }
    }

    /// The logged actions `first…last`, read a page at a time.
    static func actions(of store: any StoreSource, from first: UInt64, through last: UInt64) async throws(ToolError) -> [ActionEnvelope] {
        var actions: [ActionEnvelope] = []
        var next: UInt64? = first
        while let from = next, from <= last {
            let page = try await store.history(from: from, to: last, limit: store.historyPageSize, types: nil)
            actions += page.actions
            next = page.next
        }
        return actions
    }
}

/// A slice folded through this program's reducers as a replay does, with `--redact` applied: the
/// start state and each action as a file holds them (payloads redacted), and what each changed.
struct FoldedSlice: Sendable {
    struct Step: Sendable {
        var envelope: ActionEnvelope
        /// The store's own `@revert`: the state becomes the recorded one, not the reducers'.
        var isRevert: Bool
        /// What it changed, from the state before to the state after.
        var change: JSONPatch
    }

    var startSeq: UInt64
    var startState: JSONValue
    var steps: [Step]
    /// The state after the last step.
    var endState: JSONValue
}

/// Folds a ``HistorySlice`` with ``HistoryReplay`` (what a generated test and a bundle's replay
/// run), redacting as it goes. The fold as recorded must end in the recorded state (else these
/// are not the reducers that recorded it): without redaction that fold is the one returned, checked
/// at its end; redacted, the slice is folded as recorded first.
struct SliceFolder<State: StoreState> {
    let definition: StoreDefinition<State>

    /// Whether these are the stock reducers, whose payloads' shapes say where their values land.
    var isStock: Bool { definition.identity.name == StoreDefinition<JSONValue>.stock.identity.name }

    func fold(_ slice: HistorySlice, redacting redactions: [String]) throws(ToolError) -> FoldedSlice {
        var redaction: TestRedaction
        do {
            redaction = try TestRedaction(redactions)
        } catch {
            throw ToolError("--redact: \(error.message)", exitStatus: ExitStatus.usage)
        }
        if !redaction.isEmpty { try checkReproduces(slice) }
        let start = redaction.redact(slice.startState)
        var replay: HistoryReplay<State>
        do {
            replay = try HistoryReplay(definition, after: slice.startSeq, state: start.jsonString)
        } catch {
            throw ToolError("the state at seq \(slice.startSeq) does not load into this program's state: \(error)")
        }
        var folded = FoldedSlice(startSeq: slice.startSeq, startState: start, steps: [], endState: start)
        folded.steps.reserveCapacity(slice.actions.count)
        var before = start
        for envelope in slice.actions {
            let after: JSONValue
            var step = FoldedSlice.Step(envelope: envelope, isRevert: false, change: JSONPatch([]))
            if case .revert? = try? StoreAction(envelope.action) {
                guard let restored = slice.revertedStates[envelope.seq] else {
                    throw ToolError("the state after the @revert at seq \(envelope.seq) was not read")
                }
                after = redaction.redact(restored)
                do {
                    try replay.restore(envelope.seq, to: after)
                } catch {
                    throw ToolError("the state after the @revert at seq \(envelope.seq) does not load into this program's state: \(error)")
                }
                step.isRevert = true
            } else {
                if !redaction.isEmpty {
                    step.envelope.action.payload = isStock
                        ? redaction.redactStockPayload(type: envelope.action.type, envelope.action.payload)
                        : redaction.redact(envelope.action.payload)
                }
                do {
                    try replay.fold(step.envelope)
                    after = try replay.state.jsonValue()
                } catch {
                    throw redaction.isEmpty
                        ? notReplayed(error) : ToolError("seq \(envelope.seq) (\(envelope.action.type)) does not replay once redacted: \(error)")
                }
                if !redaction.isEmpty { try checkNothingExposed(after, by: step.envelope, &redaction) }
            }
            step.change = JSONPatch(from: before, to: after)
            folded.steps.append(step)
            before = after
        }
        if redaction.isEmpty, before != slice.endState { throw notReproduced(slice) }
        folded.endState = before
        return folded
    }

    /// A payload can carry a value into a redacted part of the state by another path than the
    /// state's (the stock `set` names the path in the payload and holds the value under `value`):
    /// the fold of the redacted payload then writes the value itself, and the file would show it.
    /// Refused, naming where the payload holds it, so that a `--redact` of that path hides it.
    private func checkNothingExposed(_ state: JSONValue, by envelope: ActionEnvelope, _ redaction: inout TestRedaction) throws(ToolError) {
        let exposed = redaction.exposed(in: state)
        guard let first = exposed.first else { return }
        let inPayload = TestRedaction.pointers(of: first.value, in: envelope.action.payload)
        let reason = inPayload.isEmpty
            ? "it comes from a part of the state --redact does not hide: redact that part too"
            : "its payload holds it at " + inPayload.map { $0.description.isEmpty ? "the root" : $0.description }.joined(separator: ", ") + ": redact that too"
        throw ToolError(
            "seq \(envelope.seq) (\(envelope.action.type)) writes a value at \(first.pointer) that --redact hides in the state; \(reason)",
            exitStatus: ExitStatus.usage
        )
    }

    /// The slice folded as recorded must end in the recorded state.
    private func checkReproduces(_ slice: HistorySlice) throws(ToolError) {
        do {
            var replay = try HistoryReplay(definition, after: slice.startSeq, state: slice.startState.jsonString)
            for envelope in slice.actions {
                if case .revert? = try? StoreAction(envelope.action) {
                    try replay.restore(envelope.seq, to: slice.revertedStates[envelope.seq] ?? .null)
                } else {
                    try replay.fold(envelope)
                }
            }
            guard try replay.state.jsonValue() == slice.endState else { throw notReproduced(slice) }
        } catch let error as ToolError {
            throw error
        } catch {
            throw notReplayed(error)
        }
    }

    private func notReproduced(_ slice: HistorySlice) -> ToolError {
        ToolError(
            "these reducers (\(definition.identity)) do not make the state recorded at seq \(slice.endSeq) from that at seq \(slice.startSeq): "
                + "use the program that recorded the history"
        )
    }

    private func notReplayed(_ error: any Error) -> ToolError {
        ToolError("the slice does not replay with these reducers (\(definition.identity)): \(error)")
    }
}
