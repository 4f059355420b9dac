import ReelCore
import ReelJSON
import ReelStorage

/// The part of a stock JSON state that decides the value at one path: the value there whole, and
/// each ancestor object with only the member on the way to it. An action that changed the path,
/// applied by the stock reducer to the skeleton, leaves there the value it left in the whole
/// state, or fails; never another value:
///
/// - what the action writes at or under the path comes from its payload and the value there;
/// - what it writes above the path replaces an ancestor (or merges into it, member by member),
///   from the payload and that ancestor's member on the way;
/// - an action that reads anything else (a `patch` `test`, `copy` or `move` from elsewhere, an
///   array position, `@revert`) finds it missing in the skeleton and fails, and the caller applies
///   it to the whole state instead.
///
/// That holds for paths whose tokens cannot be array positions (no `-`, no digits): an ancestor
/// the skeleton holds as an object, but which an action outside the path's changes turned into
/// an array (the path absent before and after), takes no action at such a token the way an
/// array would. An ancestor that is not an object is kept whole; the path is absent under it,
/// and only an action replacing it (or something above it) can change that.
struct PathSkeleton {
    let path: JSONPointer
    private(set) var document: JSONValue

    init(path: JSONPointer, state: JSONValue) {
        self.path = path
        document = Self.trimmed(state, path.tokens[...])
    }

    /// From a document already trimmed to `path` (as ``BinaryReader/readJSON(keepingOnly:maxDepth:)``
    /// reads one).
    init(path: JSONPointer, trimmed: JSONValue) {
        self.path = path
        document = trimmed
    }

    /// Whether a path's values can be followed in a skeleton: none of its tokens could name an
    /// array position.
    static func follows(_ path: JSONPointer) -> Bool {
        path.tokens.allSatisfy { token in
            token != "-" && !(!token.isEmpty && token.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        }
    }

    /// The value at the path; `nil` when absent.
    var value: JSONValue? { document.value(at: path) }

    /// Applies `action` with the stock reducer; `false`, leaving the skeleton as it was, when it
    /// fails (or is reserved, as `@revert` is): only the whole state can take it.
    mutating func apply(_ action: ActionEnvelope) -> Bool {
        guard !action.action.isReserved else { return false }
        var next = document
        do {
            try JSONDocumentReducer().reduce(into: &next, action: action)
        } catch {
            return false
        }
        document = Self.trimmed(next, path.tokens[...])
        return true
    }

    private static func trimmed(_ value: JSONValue, _ tokens: ArraySlice<String>) -> JSONValue {
        guard let token = tokens.first, case .object(let members) = value else { return value }
        guard let child = members[token] else { return .object([:]) }
        return .object([token: trimmed(child, tokens.dropFirst())])
    }
}

extension Timeline {
    /// The skeleton of `path` in the state at `seq`, built without rebuilding the whole state:
    /// only that path's part of the nearest checkpoint is decoded, and only the actions that
    /// changed the path since are applied to it. `nil` where that does not apply (another reducer
    /// than the stock one, a path through array positions, no change index, an action the
    /// skeleton cannot take): the caller rebuilds the whole state.
    func skeleton(of path: JSONPointer, at seq: UInt64) throws(StoreError) -> PathSkeleton? {
        guard definition.reducer is JSONDocumentReducer, State.self == JSONValue.self, PathSkeleton.follows(path),
            indexedThrough() > 0
        else { return nil }
        // How many changes since the checkpoint it would start from, before that checkpoint is
        // read: a path most actions change is rebuilt faster whole, reading the log ahead in order.
        let start: UInt64
        do {
            start = try directory.newestCheckpointSeq(atOrBefore: seq, reducer: definition.identity) ?? 0
        } catch {
            throw StoreError(error)
        }
        let changes = try changedSeqs(path: path, from: start + 1, through: seq, limit: Self.skeletonChangeLimit)
        guard changes.next == nil else { return nil }
        let found: (checkpoint: Checkpoint?, skipped: [SkippedCheckpoint])
        do {
            found = try directory.newestCheckpoint(atOrBefore: seq, reducer: definition.identity)
        } catch {
            throw StoreError(error)
        }
        // Another one when that was damaged: the changes counted are not the ones to apply.
        guard (found.checkpoint?.seq ?? 0) == start else { return nil }
        var skeleton: PathSkeleton
        if let checkpoint = found.checkpoint {
            do {
                skeleton = PathSkeleton(path: path, trimmed: try checkpoint.state(keepingOnly: path))
            } catch {
                return nil
            }
        } else {
            skeleton = PathSkeleton(path: path, state: try definition.initialState.jsonValueOrThrow(seq: 0))
        }
        for changed in changes.seqs {
            let envelope: ActionEnvelope?
            do { envelope = try directory.envelope(at: changed) } catch { throw StoreError(error) }
            guard let envelope, skeleton.apply(envelope) else { return nil }
        }
        return skeleton
    }

    /// The most changes of a path since its checkpoint that ``skeleton(of:at:)`` applies one by one.
    static var skeletonChangeLimit: Int { 1_024 }
}
