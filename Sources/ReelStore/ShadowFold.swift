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

    /// Starts again from the checkpoint at `seq`, as if it had folded there: the state the
    /// checkpoint holds, read into this version's state. `sameReducers`: the checkpoint must have
    /// been made by these reducers (a baseline restoring its own); otherwise any reducer's will do
    /// (this version starting where a baseline's checkpoint agreed with it).
    public mutating func restore(fromCheckpointAt seq: UInt64, sameReducers: Bool) throws(StoreError) {
        let found: Checkpoint?
        do { found = try timeline.directory.checkpoint(at: seq) } catch { throw StoreError(error) }
        guard let checkpoint = found else { throw StoreError(.invalidArgument, "there is no checkpoint at seq \(seq)") }
        if sameReducers, checkpoint.reducer != timeline.definition.identity {
            throw StoreError(.invalidArgument, "the checkpoint at seq \(seq) was made by \(checkpoint.reducer), not \(timeline.definition.identity)")
        }
        do {
            state = try State(jsonValue: try checkpoint.state(checkingHash: true))
        } catch {
            throw StoreError(.invalidArgument, "the checkpoint at seq \(seq) does not load into this version's state: \(error)")
        }
        self.seq = seq
        mark = (state, seq)
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
    public func digests(of paths: [JSONPointer], by digest: ShadowDigest = .structural) throws(StoreError) -> [String: String] {
        Self.digests(of: try json(), paths: paths, by: digest)
    }

    /// The digests of each part of `document` (a state as JSON: this fold's, or a checkpoint's).
    public static func digests(of document: JSONValue, paths: [JSONPointer], by digest: ShadowDigest = .structural) -> [String: String] {
        var digests: [String: String] = [:]
        for (pointer, value) in Self.parts(of: document, paths: paths) {
            switch digest {
            case .canonical:
                digests[pointer] = Checkpoint.hex(Checkpoint.hash(of: value.binaryEncoded()).prefix(16))
            case .structural:
                digests[pointer] = String(ShadowDigest.structuralHash(of: value), radix: 16)
            }
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

/// How a shadow replay digests the parts of a state. Both sides must digest alike: the side that
/// asks says which it wants, and a worker from before this choice answers `canonical`.
public enum ShadowDigest: String, Sendable {
    /// The SHA-256 of the canonical binary encoding: every object's members sorted, encoded, hashed.
    case canonical
    /// A structural hash: strings through XXH3, arrays in order, an object's members combined in
    /// any order (a sum of their hashes), so nothing is sorted or encoded. A fifth of a shadow
    /// replay's time went to the canonical encoding's sorts.
    case structural

    /// The structural hash of `value`: the same in every process and on every machine.
    public static func structuralHash(of value: JSONValue) -> UInt64 {
        switch value {
        case .null: return mix(1)
        case .bool(let flag): return mix(flag ? 3 : 2)
        case .int(let number): return mix(4 &+ mix(UInt64(bitPattern: number)))
        case .double(let number): return mix(5 &+ mix(number.bitPattern))
        case .string(let text): return mix(6 &+ hash(text))
        case .array(let elements):
            var combined: UInt64 = 7
            for element in elements { combined = mix(combined ^ structuralHash(of: element)) }
            return mix(combined &+ UInt64(elements.count))
        case .object(let members):
            var sum: UInt64 = 0
            for (key, member) in members {
                let memberHash = structuralHash(of: member)
                sum &+= mix(hash(key) ^ (memberHash << 29 | memberHash >> 35))
            }
            return mix(8 &+ mix(sum ^ UInt64(members.count)))
        }
    }

    /// XXH3 of the string's UTF-8.
    private static func hash(_ text: String) -> UInt64 {
        var text = text
        return text.withUTF8 { RecordChecksum.of(UnsafeRawBufferPointer($0), seed: 0x5EED) }
    }

    /// SplitMix64's finalizer: every bit of the input moves every bit of the output.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
