import ReelCore
import ReelJSON
import ReelStorage

/// One reducer version's side of a shadow replay (`APP shadow`): the log folded from the initial
/// state with this version's reducers, an interval at a time, so that another version folding
/// the same log beside it can be compared with it at each interval's end, and both stepped
/// through an interval again, seq by seq, where a part of the state first differs.
///
/// The state at the start of the last interval is kept (a copy, whose storage the state shares
/// until the fold changes it): ``rewind()`` goes back to it.
public struct ShadowFold<State: StoreState> {
    public let timeline: Timeline<State>
    public private(set) var state: State
    public private(set) var seq: UInt64 = 0
    private var mark: (state: State, seq: UInt64)

    public init(timeline: Timeline<State>) {
        self.timeline = timeline
        state = timeline.definition.initialState
        mark = (state, 0)
    }

    /// Folds every action through `last` (the start of the interval kept for ``rewind()``);
    /// returns the seqs whose action the reducers refused (each left the state as it was).
    @_specialize(where State == JSONValue)
    public mutating func advance(through last: UInt64) throws(StoreError) -> [UInt64] {
        mark = (state, seq)
        guard last > seq else { return [] }
        var result = Reconstruction(seq: last, state: state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: [])
        try timeline.replay(from: seq + 1, through: last, into: &result, skipping: [])
        state = result.state
        seq = last
        return result.refused.map(\.seq)
    }

    /// Goes back to the initial state, seq 0.
    public mutating func restart() {
        state = timeline.definition.initialState
        seq = 0
        mark = (state, 0)
    }

    /// Goes back to the start of the last interval.
    public mutating func rewind() {
        (state, seq) = mark
    }

    /// Folds the next action; whether the reducers refused it.
    public mutating func step() throws(StoreError) -> Bool {
        let found: ActionEnvelope?
        do { found = try timeline.directory.envelope(at: seq + 1) } catch { throw StoreError(error) }
        guard let envelope = found else {
            throw StoreError(.seqOutOfRange, "seq \(seq + 1) is beyond the latest seq")
        }
        seq += 1
        let timeline = self.timeline
        do {
            try timeline.fold.apply(envelope, to: &state) { (to: UInt64) throws(StoreError) -> State in
                try timeline.state(at: to)
            }
        } catch  where error.code == .rejected || error.code == .unknownActionType {
            return true
        }
        return false
    }

    /// The state as JSON.
    public func json() throws(StoreError) -> JSONValue {
        try state.jsonValueOrThrow(seq: seq)
    }

    /// A digest of each part of the state: the value at each of `paths`, or, when `paths` is
    /// empty, at each top-level member (by its pointer). Absent parts are left out.
    public func digests(of paths: [JSONPointer]) throws(StoreError) -> [String: String] {
        let document = try json()
        var digests: [String: String] = [:]
        for (pointer, value) in Self.parts(of: document, paths: paths) {
            digests[pointer] = Checkpoint.hex(Checkpoint.hash(of: value.binaryEncoded()).prefix(16))
        }
        return digests
    }

    /// The parts `digests(of:)` digests.
    public static func parts(of document: JSONValue, paths: [JSONPointer]) -> [(String, JSONValue)] {
        if paths.isEmpty {
            guard case .object(let members) = document else { return [("", document)] }
            return members.map { (JSONPointer(tokens: [$0.key]).description, $0.value) }
        }
        return paths.compactMap { path in document.value(at: path).map { (path.description, $0) } }
    }
}
