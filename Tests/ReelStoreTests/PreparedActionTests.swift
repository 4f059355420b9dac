import ReelCore
import ReelJSON
@testable import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Testing

/// Stock actions read straight from their records (`PreparedStockAction`): they
/// apply, record and refuse exactly as the actions they were read from, and every replay that
/// reads them answers as one that decodes every payload.
@Suite struct PreparedActionTests {
    typealias SplitMix = FindTests.SplitMix

    /// The stock definition without prepared actions: every replay decodes every payload.
    static var decodingEveryPayload: StoreDefinition<JSONValue> {
        var definition = StoreDefinition<JSONValue>.stock
        definition.applyPrepared = nil
        definition.applyPreparedRecordingChanges = nil
        return definition
    }

    /// The stock reducer that logs what it refuses, leaving the state as it was: a log of actions
    /// the stock reducer refuses at replay, as one written by reducers that meant something else.
    struct Permissive: Reducer {
        var actionTypes: Set<String> { JSONDocumentReducer().actionTypes }
        func reduce(into state: inout JSONValue, action: ActionEnvelope) throws(ReducerError) {
            try? JSONDocumentReducer().reduce(into: &state, action: action)
        }
    }

    /// Random actions, more of the shapes that are prepared, and some the reducer refuses.
    static func action(_ actions: inout ChangeIndexTests.Actions, state: JSONValue, seq: UInt64) -> Action {
        var action = actions.next(state: state, seq: seq)
        switch seq % 6 {
        case 0:
            if case .array(let operations) = action.payload, let first = operations.first { action = Action(type: "patch", payload: [first]) }
        case 1:
            let path = actions.pointer(in: state, existing: seq % 4 == 1).description
            action = Action(type: "increment", payload: seq % 12 == 1 ? ["path": .string(path)] : ["by": seq % 5 == 0 ? "x" : 2.5, "path": .string(path)])
        case 2:
            action = Action(type: "set", payload: ["path": .string(actions.pointer(in: state, existing: false).description), "value": actions.value()])
        default:
            break
        }
        return action
    }

    @Test(arguments: [21, 22, 23] as [UInt64])
    func aPreparedActionAppliesRecordsAndRefusesAsItsEnvelope(seed: UInt64) throws {
        var actions = ChangeIndexTests.Actions(random: SplitMix(state: seed))
        var state: JSONValue = ["a": ["b": 1, "0": [1, 2]], "s/l": "x"]
        var prepared = 0
        var refused = 0
        for seq in 1...UInt64(900) {
            let action = Self.action(&actions, state: state, seq: seq)
            if action.type == "@revert" { continue }
            let envelope = ActionEnvelope(seq: seq, action: action, time: Timestamp(nanosecondsSince1970: 0), peer: Peer(uid: 0, gid: 0, pid: 0))
            var expected = state
            let reduced = Result { () throws(ReducerError) in try JSONDocumentReducer().reduce(into: &expected, action: envelope) }
            defer { state = expected }
            let read = action.payload.binaryEncoded().withUnsafeBytes { PreparedStockAction(type: action.type, binaryPayload: $0) }
            #expect(read == PreparedStockAction(type: action.type, payload: action.payload), "seq \(seq): \(action.type) \(action.payload)")
            guard let read else { continue }
            prepared += 1
            #expect(PreparedStockAction(type: action.type, payload: read.payload) == read, "its payload reads back as the same action")

            var applied = state
            let didApply = JSONDocumentReducer.apply(read, to: &applied)
            switch reduced {
            case .success:
                #expect(didApply && applied == expected, "seq \(seq): \(action.type) \(action.payload)")
            case .failure:
                refused += 1
                #expect(!didApply && applied == state, "seq \(seq): applied where the reducer refuses \(action.type) \(action.payload)")
            }

            var fromEnvelope = state
            var envelopeRecorder = JSONChangeRecorder()
            let envelopeTook = JSONDocumentReducer.applyRecordingChanges(envelope, to: &fromEnvelope, into: &envelopeRecorder)
            var fromPrepared = state
            var preparedRecorder = JSONChangeRecorder()
            let preparedTook = JSONDocumentReducer.applyRecordingChanges(read, to: &fromPrepared, into: &preparedRecorder)
            #expect(preparedTook == envelopeTook, "seq \(seq): \(action.type) \(action.payload)")
            #expect(fromPrepared == fromEnvelope && preparedRecorder.changes == envelopeRecorder.changes, "seq \(seq)")
        }
        #expect(prepared > 300 && refused > 10, "too few prepared (\(prepared)) or refused (\(refused)) actions to say anything")
    }

    /// A log of random stock actions with checkpoints, some refused by the stock reducer, read by
    /// timelines with and without prepared actions: the same states at every seq, the same
    /// verification, the same refusals in the same words, the same change index.
    @Test(arguments: [31, 32] as [UInt64])
    func replaysThatPrepareAnswerAsReplaysThatDecode(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 40, storage: .init(durable: false))
        options.changeIndex = false
        let writing = StoreDefinition<JSONValue>(name: JSONDocumentReducer.name, version: JSONDocumentReducer.version, initialState: .object([:]), reducer: Permissive())
        let store = try Store(path: directory.sub("data"), definition: writing, options: options)
        var actions = ChangeIndexTests.Actions(random: SplitMix(state: seed))
        var states: [JSONValue] = [.object([:])]
        for seq in 1...UInt64(5_000) {
            let action = Self.action(&actions, state: store.snapshot.state, seq: seq)
            if action.type == "@revert" { continue }
            try await store.dispatch(action)
            states.append(store.snapshot.state)
        }
        await store.close()

        let preparing = Timeline(directory: store.directory, definition: .stock)
        let decoding = Timeline(directory: store.directory, definition: Self.decodingEveryPayload)
        #expect(Fold(definition: StoreDefinition<JSONValue>.stock).prepares && !Fold(definition: Self.decodingEveryPayload).prepares)
        let latest = UInt64(states.count - 1)
        for seq in stride(from: 0, through: latest, by: 97) + [latest] {
            let prepared = try preparing.reconstruct(at: seq)
            let decoded = try decoding.reconstruct(at: seq)
            #expect(prepared.state == states[Int(seq)] && decoded.state == states[Int(seq)], "seq \(seq)")
            #expect(prepared.refused.map(\.seq) == decoded.refused.map(\.seq) && prepared.refused.map(\.reason) == decoded.refused.map(\.reason))
        }
        // From the start, past every checkpoint (the refused actions are the log's, not the replay's).
        let whole = try preparing.reconstruct(at: latest, continuing: FoldedState(seq: 0, state: .object([:])))
        let wholeDecoded = try decoding.reconstruct(at: latest, continuing: FoldedState(seq: 0, state: .object([:])))
        #expect(whole.state == states.last && wholeDecoded.state == states.last)
        #expect(!whole.refused.isEmpty && whole.refused.map(\.reason) == wholeDecoded.refused.map(\.reason))
        #expect(whole.refused.map(\.seq) == wholeDecoded.refused.map(\.seq))

        let verified = try preparing.verify()
        let verifiedDecoding = try decoding.verify()
        #expect(verified.mismatch == nil && verified.matched.count > 50 && verified.matched == verifiedDecoding.matched)
        #expect(verified.refused.map(\.seq) == verifiedDecoding.refused.map(\.seq) && verified.refused.map(\.reason) == verifiedDecoding.refused.map(\.reason))
        #expect(verified.refused.map(\.seq) == whole.refused.map(\.seq))

        var preparedState = JSONValue.object([:])
        var decodedState = JSONValue.object([:])
        let preparedLists = ChangeLists(try preparing.changePostings(from: 1, through: latest, state: &preparedState))
        let decodedLists = ChangeLists(try decoding.changePostings(from: 1, through: latest, state: &decodedState))
        #expect(preparedState == states.last && decodedState == states.last)
        #expect(Self.contents(preparedLists) == Self.contents(decodedLists))
        #expect(Self.contents(preparedLists).count > 20)
    }

    /// Each list's key prefix and seqs, in order.
    static func contents(_ lists: ChangeLists) -> [[UInt64]] {
        var contents: [[UInt64]] = []
        lists.forEachList { prefix, seqs in contents.append(prefix.map(UInt64.init) + [.max] + Array(seqs)) }
        return contents
    }
}
