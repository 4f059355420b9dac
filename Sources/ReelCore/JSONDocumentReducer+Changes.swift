import ReelJSON

/// What a stock action will change, worked out from the state before it and the payload alone,
/// without applying it: the change index records this for every action, and a diff of the whole
/// state before and after would cost in proportion to the state (a 100,000-member root object is
/// visited whole) where this costs in proportion to the payload.
///
/// Each type's effect is mirrored exactly: `set`, `remove`, `increment`, `append`, `merge`, and a
/// `patch` whose operations touch unrelated places (none is at, above or below another, and no
/// two insert into or remove from one array). Anything else (a `patch` whose operations build on
/// one another, a payload the reducer will refuse) answers `false`, and the caller compares the
/// states before and after instead, discarding what was recorded on the way (as it does when the
/// reducer refuses the action, which it applies after asking).
extension JSONDocumentReducer {
    public static func predictChanges(of action: ActionEnvelope, in state: JSONValue, into recorder: inout JSONChangeRecorder) -> Bool {
        let payload = action.payload
        switch action.type {
        case "set":
            guard let path = pointer(payload), let value = payload["value"] else { return false }
            return predictAdd(value, at: path.tokens, replacing: true, in: state, into: &recorder)
        case "remove":
            guard let path = pointer(payload) else { return false }
            return predictRemove(at: path.tokens, in: state, into: &recorder)
        case "increment":
            guard let path = pointer(payload) else { return false }
            let by = payload["by"] ?? .int(1)
            guard by.doubleValue != nil else { return false }
            guard let old = state.value(at: path) else {
                return predictAdd(by, at: path.tokens, replacing: false, in: state, into: &recorder)
            }
            guard let new = try? incremented(old, by: by, at: path) else { return false }
            recorder.record(at: path.tokens, from: old, to: new)
            return true
        case "append":
            guard let path = pointer(payload), let value = payload["value"] else { return false }
            switch state.value(at: path) {
            case .none:
                return predictAdd(.array([value]), at: path.tokens, replacing: false, in: state, into: &recorder)
            case .array(let elements)?:
                recorder.record(at: path.tokens + [String(elements.count)], from: .none, to: value)
                return true
            default:
                return false
            }
        case "merge":
            predictMerge(payload, into: state, at: [], recorder: &recorder)
            return true
        case "patch":
            guard let patch = try? JSONPatch(payload) else { return false }
            return predictPatch(patch, in: state, into: &recorder)
        default:
            return false
        }
    }

    /// `set` (`replacing`: an existing array element is replaced) or JSON Patch `add` (an index
    /// inside an array inserts there).
    private static func predictAdd(
        _ value: JSONValue, at tokens: [String], replacing: Bool, in state: JSONValue, into recorder: inout JSONChangeRecorder
    ) -> Bool {
        guard let last = tokens.last else {
            recorder.record(at: [], from: state, to: value)
            return true
        }
        let parentTokens = Array(tokens.dropLast())
        switch state.value(at: JSONPointer(tokens: parentTokens)) {
        case .object(let members)?:
            recorder.record(at: tokens, from: members[last], to: value)
            return true
        case .array(let elements)?:
            let index = last == "-" ? elements.count : JSONPointer.arrayIndex(last)
            guard let index, index <= elements.count else { return false }
            if index == elements.count {
                recorder.record(at: parentTokens + [String(index)], from: .none, to: value)
            } else if replacing {
                recorder.record(at: tokens, from: elements[index], to: value)
            } else {
                recorder.recordShift(at: parentTokens, old: elements, start: index, newCount: elements.count + 1) {
                    $0 == index ? value : elements[$0 < index ? $0 : $0 - 1]
                }
            }
            return true
        default:
            return false
        }
    }

    private static func predictRemove(at tokens: [String], in state: JSONValue, into recorder: inout JSONChangeRecorder) -> Bool {
        guard let last = tokens.last else { return false }
        let parentTokens = Array(tokens.dropLast())
        switch state.value(at: JSONPointer(tokens: parentTokens)) {
        case .object(let members)?:
            guard let old = members[last] else { return false }
            recorder.record(at: tokens, from: old, to: .none)
            return true
        case .array(let elements)?:
            guard let index = JSONPointer.arrayIndex(last), index < elements.count else { return false }
            recorder.recordShift(at: parentTokens, old: elements, start: index, newCount: elements.count - 1) { elements[$0 + 1] }
            return true
        default:
            return false
        }
    }

    /// RFC 7396, member by member: only the members the patch names are visited.
    private static func predictMerge(_ patch: JSONValue, into target: JSONValue?, at tokens: [String], recorder: inout JSONChangeRecorder) {
        guard case .object(let changes) = patch, case .object(let members)? = target else {
            // A non-object patch replaces the target whole; an object patch merges into an empty
            // object when the target is not one (RFC 7396 section 2): either way, into nothing.
            var merged = JSONValue.null
            JSONMergePatch.apply(patch, to: &merged)
            recorder.record(at: tokens, from: target, to: merged)
            return
        }
        for (key, change) in changes {
            if change.isNull {
                if let old = members[key] { recorder.record(at: tokens + [key], from: old, to: .none) }
            } else if case .object = change, case .object? = members[key] {
                predictMerge(change, into: members[key], at: tokens + [key], recorder: &recorder)
            } else {
                var merged = JSONValue.null
                JSONMergePatch.apply(change, to: &merged)
                recorder.record(at: tokens + [key], from: members[key], to: merged)
            }
        }
    }

    /// A patch whose operations are independent: each one's effect is what it would be alone on
    /// the state before the patch.
    private static func predictPatch(_ patch: JSONPatch, in state: JSONValue, into recorder: inout JSONChangeRecorder) -> Bool {
        guard patch.operations.count <= 32 else { return false }
        var footprints: [(writes: [JSONPointer], reads: [JSONPointer])] = []
        for operation in patch.operations {
            guard let footprint = footprint(of: operation, in: state) else { return false }
            footprints.append(footprint)
        }
        for (index, earlier) in footprints.enumerated() {
            for later in footprints[(index + 1)...] {
                let touched = later.writes + later.reads
                if earlier.writes.contains(where: { write in touched.contains { related(write, $0) } }) { return false }
                if earlier.reads.contains(where: { read in later.writes.contains { related(read, $0) } }) { return false }
            }
        }
        // A `false` on the way leaves part of the patch recorded: the caller starts the edit over.
        for operation in patch.operations {
            let predicted: Bool
            switch operation {
            case .add(let path, let value):
                predicted = predictAdd(value, at: path.tokens, replacing: false, in: state, into: &recorder)
            case .remove(let path):
                predicted = predictRemove(at: path.tokens, in: state, into: &recorder)
            case .replace(let path, let value):
                guard let old = state.value(at: path) else { return false }
                recorder.record(at: path.tokens, from: old, to: value)
                predicted = true
            case .move(let from, let path):
                if from == path { continue }
                guard let value = state.value(at: from) else { return false }
                predicted = predictRemove(at: from.tokens, in: state, into: &recorder)
                    && predictAdd(value, at: path.tokens, replacing: false, in: state, into: &recorder)
            case .copy(let from, let path):
                guard let value = state.value(at: from) else { return false }
                predicted = predictAdd(value, at: path.tokens, replacing: false, in: state, into: &recorder)
            case .test:
                continue
            }
            guard predicted else { return false }
        }
        return true
    }

    /// Where an operation writes (an array it inserts into or removes from counts as written
    /// whole: its later elements move) and what it reads; `nil` for a root operation, which
    /// touches everything.
    private static func footprint(of operation: JSONPatch.Operation, in state: JSONValue) -> (writes: [JSONPointer], reads: [JSONPointer])? {
        func scope(_ path: JSONPointer) -> JSONPointer? {
            guard let parent = path.parent else { return nil }
            if case .array? = state.value(at: parent) { return parent }
            return path
        }
        switch operation {
        case .add(let path, _), .remove(let path), .replace(let path, _):
            return scope(path).map { ([$0], []) }
        case .move(let from, let path):
            guard let fromScope = scope(from), let toScope = scope(path) else { return nil }
            if from != path, related(fromScope, toScope) { return nil }
            return ([fromScope, toScope], [from])
        case .copy(let from, let path):
            return scope(path).map { ([$0], [from]) }
        case .test(let path, _):
            return ([], [path])
        }
    }

    private static func related(_ a: JSONPointer, _ b: JSONPointer) -> Bool {
        a.isPrefix(of: b) || b.isPrefix(of: a)
    }

    private static func pointer(_ payload: JSONValue) -> JSONPointer? {
        guard case .string(let text)? = payload["path"] else { return nil }
        return try? JSONPointer(text)
    }

    /// `by` added to `target`, as `increment` does it: integers stay exact and refuse to
    /// overflow; any other number pair adds as doubles.
    static func incremented(_ target: JSONValue, by: JSONValue, at path: JSONPointer) throws(JSONError) -> JSONValue {
        switch (target, by) {
        case let (.int(a), .int(b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            guard !overflow else { throw JSONError(.typeMismatch, "\(path) + \(b) overflows a 64-bit integer") }
            return .int(sum)
        case let (a, b) where a.doubleValue != nil && b.doubleValue != nil:
            return .double(a.doubleValue! + b.doubleValue!)
        default:
            throw JSONError(.typeMismatch, "\(path) is \(target.typeName), not a number")
        }
    }
}
