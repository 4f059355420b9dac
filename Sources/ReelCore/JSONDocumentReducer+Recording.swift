import ReelJSON

/// The commonest stock actions applied and recorded in one walk down their path.
///
/// What the change index records of an action is what it changed (``predictChanges(of:in:into:)``
/// works it out before the reducer applies the action). For the shapes below, the walk that
/// applies the action already meets the value it replaces, so the change is recorded from there:
/// the prediction's own walk down the path, its parsing of the payload and of the pointer, are
/// not repeated for them. Everything else, and every error, is left to the prediction and the
/// reducer, which reports the error as it always does.
extension JSONDocumentReducer {
    /// Applies `action` to `state` and records what it changed into `recorder`'s current edit,
    /// when the action is one of:
    ///
    /// - `set` of a member of the root object (any name), or of an object member (a last token that
    ///   is neither an array index nor `-`);
    /// - `increment` of a value that is there;
    /// - `merge` (which cannot fail);
    /// - `patch` of one `add` of an object member or one `replace`.
    ///
    /// - Returns: `true` when it applied and recorded the action, exactly as ``reduce(into:action:)``
    ///   applies it and ``predictChanges(of:in:into:)`` records it; `false`, with `state` and
    ///   `recorder` untouched, for any other action and for one that fails.
    public static func applyRecordingChanges(
        _ action: ActionEnvelope, to state: inout JSONValue, into recorder: inout JSONChangeRecorder
    ) -> Bool {
        let payload = action.payload
        switch action.type {
        case "merge":
            JSONMergePatch.apply(payload, to: &state, recordingInto: &recorder)
            return true
        case "patch":
            guard case .array(let operations) = payload, operations.count == 1 else { return false }
        case "set":
            // A member of the root, as the reducer sets it: no pointer made, no walk (the writer
            // records every dispatch, and most `set`s are these).
            if case .object(let members) = payload, let value = members["value"], let name = rootMemberName(members["path"]),
                setRecordingRootMember(name, to: value, in: &state, recorder: &recorder)
            {
                return true
            }
        default:
            break
        }
        guard let prepared = PreparedStockAction(type: action.type, payload: payload) else { return false }
        return applyRecordingChanges(prepared, to: &state, into: &recorder)
    }

    /// ``applyRecordingChanges(_:to:into:)`` of an action read from its record
    /// (``PreparedStockAction``): `true` when it applied and recorded it; `false`, with `state`
    /// and `recorder` untouched, for any other shape and for one that fails.
    public static func applyRecordingChanges(
        _ action: PreparedStockAction, to state: inout JSONValue, into recorder: inout JSONChangeRecorder
    ) -> Bool {
        switch action {
        case .set(let path, let value):
            // A member of a root object, whatever its name: what the reducer's walk sets there.
            if path.tokens.count == 1, setRecordingRootMember(path.tokens[0], to: value, in: &state, recorder: &recorder) {
                return true
            }
            guard isMemberToken(path.lastToken) else { return false }
            return add(value, at: path, to: &state, recorder: &recorder)
        case .increment(let path, let by):
            let by = by ?? .int(1)
            var old: JSONValue?
            var new: JSONValue?
            do {
                // `modify` throws, changing nothing, when nothing is there (the reducer then adds
                // `by`, which the prediction records) or when the sum fails.
                try state.modify(at: path) { (target: inout JSONValue) throws(JSONError) in
                    let sum = try incremented(target, by: by, at: path)
                    old = target
                    new = sum
                    target = sum
                }
            } catch {
                return false
            }
            recorder.record(at: path.tokens, from: old, to: new)
            return true
        case .patch(let patch):
            guard patch.operations.count == 1 else { return false }
            switch patch.operations[0] {
            case .add(let path, let value):
                guard isMemberToken(path.lastToken) else { return false }
                return add(value, at: path, to: &state, recorder: &recorder)
            case .replace(let path, let value):
                guard let old = try? state.replace(at: path, with: value) else { return false }
                recorder.record(at: path.tokens, from: old, to: value)
                return true
            default:
                return false
            }
        }
    }

    /// `set` of member `name` of a root object, as the reducer sets it, recorded from the member it
    /// replaced; `false`, changing nothing, when the state is not an object.
    private static func setRecordingRootMember(
        _ name: String, to value: JSONValue, in state: inout JSONValue, recorder: inout JSONChangeRecorder
    ) -> Bool {
        let (applied, old) = setRootMember(name, of: &state, to: value)
        if applied { recorder.record(name, below: PointerTree.root, from: old, to: value) }
        return applied
    }

    /// `add` of an object member (the caller checked that the last token is not an array
    /// index), recorded from the member it replaced.
    private static func add(_ value: JSONValue, at path: JSONPointer, to state: inout JSONValue, recorder: inout JSONChangeRecorder) -> Bool {
        guard let outcome = try? state.addReportingOutcome(value, at: path) else { return false }
        switch outcome {
        case .replaced(let old):
            recorder.record(at: path.tokens, from: old, to: value)
        case .insertedMember:
            recorder.record(at: path.tokens, from: nil, to: value)
        case .insertedElement:
            // Not for a token that is no array index (an array parent refuses it); were it ever,
            // the array's change is recorded whole rather than element by element.
            recorder.recordUnfollowed(at: Array(path.tokens.dropLast()))
        }
        return true
    }

    /// Whether `token` can only name an object member: there is one, it is not `-`, and not all
    /// digits (the empty token is all digits, as the reducer reads it). `set` adds such a member
    /// in one walk down the path (``reduce(into:action:)``), where another token needs a look first.
    static func isMemberToken(_ token: String?) -> Bool {
        guard let token, token != "-" else { return false }
        return !token.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
