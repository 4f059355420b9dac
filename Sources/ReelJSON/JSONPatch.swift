/// A JSON Patch (RFC 6902): a list of operations that edit a JSON document, applied atomically.
///
/// Operations are numbered from 0, as in the JSON array, in error messages.
public struct JSONPatch: Sendable, Equatable {
    /// One patch operation. Paths are JSON Pointers into the document being patched.
    public enum Operation: Sendable, Equatable {
        /// Adds `value` at `path`: replaces the root or an object member, or inserts into an array.
        case add(path: JSONPointer, value: JSONValue)
        /// Removes the value at `path`, which must exist.
        case remove(path: JSONPointer)
        /// Replaces the value at `path`, which must exist.
        case replace(path: JSONPointer, value: JSONValue)
        /// Removes the value at `from` and adds it at `path`; `from` must not be an ancestor of `path`.
        case move(from: JSONPointer, path: JSONPointer)
        /// Adds a copy of the value at `from` at `path`.
        case copy(from: JSONPointer, path: JSONPointer)
        /// Fails the whole patch unless the value at `path` equals `value` (`JSONValue.==`, so
        /// `1` equals `1.0`).
        case test(path: JSONPointer, value: JSONValue)
    }

    /// The operations, applied in order.
    public var operations: [Operation]

    /// Makes a patch from operations.
    ///
    /// - Parameter operations: The operations, in the order they are to be applied.
    /// How many JSON values (scalars, arrays and objects, nested ones included) the `copy`
    /// operations of one patch may copy in all.
    public static let maxCopiedValues = 1 << 20

    public init(_ operations: [Operation]) {
        self.operations = operations
    }

    /// Applies every operation to `value`, or none.
    ///
    /// The document is edited in place, never copied as a whole: each operation records how to
    /// undo itself (holding only the values it removed or replaced), and a failure undoes the
    /// operations before it in reverse order. Each single operation checks everything before it
    /// changes anything, so the failing one needs no undoing.
    ///
    /// - Parameters:
    ///   - value: The document to patch; on error it is exactly as it was.
    ///   - copyLimit: How many values the patch's `copy` operations may copy in all;
    ///     ``maxCopiedValues`` by default.
    /// - Throws: The first failing operation's error, its message prefixed with the operation's
    ///   index, kind and path. The code says what went wrong: `.pathNotFound`, `.typeMismatch`,
    ///   `.invalidPointer` (a bad array index), or `.invalidPatch` (a failed `test`, a move into
    ///   its own child, removing the root, copying more than `copyLimit` values).
    public func apply(to value: inout JSONValue, copyLimit: Int = maxCopiedValues) throws(JSONError) {
        var undoLog: [Undo] = []
        var copyBudget = copyLimit
        for (index, operation) in operations.enumerated() {
            do throws(JSONError) {
                if case .copy(let from, _) = operation, let source = value.value(at: from) {
                    // Copies share storage, so a document copied into itself n times costs little
                    // memory but holds 2ⁿ values, and writing it out (a `get`, a checkpoint) would
                    // take forever: a patch may copy this many values in all (found by fuzzing).
                    let copied = source.valueCount(upTo: copyBudget + 1)
                    guard copied <= copyBudget else {
                        throw JSONError(
                            .invalidPatch,
                            "the patch copies more than \(copyLimit) values in all; copy less in one patch"
                        )
                    }
                    copyBudget -= copied
                }
                let undo = try operation.apply(to: &value)
                // The last operation never needs undoing: if it fails it changed nothing.
                if index < operations.count - 1 { undoLog.append(undo) }
            } catch {
                for undo in undoLog.reversed() { undo.apply(to: &value) }
                throw JSONError(error.code, "operation \(index) (\(operation.summary)): \(error.message)")
            }
        }
    }
}

extension JSONPatch.Operation {
    /// The RFC 6902 name of the operation: `"add"`, `"remove"`, `"replace"`, `"move"`, `"copy"`
    /// or `"test"`.
    public var name: String {
        switch self {
        case .add: "add"
        case .remove: "remove"
        case .replace: "replace"
        case .move: "move"
        case .copy: "copy"
        case .test: "test"
        }
    }

    /// The pointer the operation acts on (its `path` member).
    public var path: JSONPointer {
        switch self {
        case .add(let path, _), .remove(let path), .replace(let path, _), .move(_, let path),
            .copy(_, let path), .test(let path, _):
            path
        }
    }

    /// "move /a to /b", for error messages.
    var summary: String {
        switch self {
        case .move(let from, let path), .copy(let from, let path):
            "\(name) \(from.displayName) to \(path.displayName)"
        default:
            "\(name) \(path.displayName)"
        }
    }

    /// Applies this one operation in place and says how to undo it. Throws before changing
    /// anything.
    func apply(to document: inout JSONValue) throws(JSONError) -> JSONPatch.Undo {
        switch self {
        case .add(let path, let value):
            return .undoing(try document.addReportingOutcome(value, at: path), at: path)
        case .remove(let path):
            return .add(path, try document.remove(at: path))
        case .replace(let path, let value):
            return .replace(path, try document.replace(at: path, with: value))
        case .copy(let from, let path):
            guard let value = document.value(at: from) else {
                throw JSONError(.pathNotFound, "nothing to copy at \(from.displayName)")
            }
            return .undoing(try document.addReportingOutcome(value, at: path), at: path)
        case .test(let path, let expected):
            guard let actual = document.value(at: path) else {
                throw JSONError(.pathNotFound, "nothing to test at \(path.displayName)")
            }
            guard actual == expected else {
                throw JSONError(.invalidPatch, "test failed: the \(actual.typeName) at \(path.displayName) is not equal to the expected \(expected.typeName)")
            }
            return .nothing
        case .move(let from, let path):
            return try Self.move(from: from, to: path, in: &document)
        }
    }

    private static func move(from: JSONPointer, to path: JSONPointer, in document: inout JSONValue) throws(JSONError) -> JSONPatch.Undo {
        if from == path {
            // Removing and re-adding in place would be a no-op; only existence is checked, and
            // this also keeps a move of the root onto itself legal.
            guard document.value(at: from) != nil else {
                throw JSONError(.pathNotFound, "nothing to move at \(from.displayName)")
            }
            return .nothing
        }
        if from.isPrefix(of: path) {
            throw JSONError(.invalidPatch, "cannot move \(from.displayName) into its own child \(path)")
        }
        let moved = try document.remove(at: from)
        do {
            let outcome = try document.addReportingOutcome(moved, at: path)
            let putBack: JSONValue? = if case .replaced(let old) = outcome { old } else { nil }
            return .move(from: outcome.location(for: path), to: from, putBack: putBack)
        } catch {
            // The add changed nothing; undoing the remove makes the move fail as a whole.
            JSONPatch.Undo.add(from, moved).apply(to: &document)
            throw error
        }
    }
}

extension JSONPatch {
    /// How to undo one applied operation. Undo steps are replayed newest first, so every pointer
    /// in them means the same place it meant right after its operation.
    enum Undo {
        case nothing
        case add(JSONPointer, JSONValue)
        case remove(JSONPointer)
        case replace(JSONPointer, JSONValue)
        /// Take the value at `from` (removing it, or putting `putBack` in its place) and add it
        /// at `to`.
        case move(from: JSONPointer, to: JSONPointer, putBack: JSONValue?)

        static func undoing(_ outcome: JSONValue.AddOutcome, at path: JSONPointer) -> Undo {
            switch outcome {
            case .replaced(let old): .replace(path, old)
            case .insertedMember, .insertedElement: .remove(outcome.location(for: path))
            }
        }

        /// Undoes the operation. The steps only reverse changes that succeeded, so they cannot
        /// fail unless this file has a bug; then continuing would leave a corrupt state.
        func apply(to document: inout JSONValue) {
            do throws(JSONError) {
                switch self {
                case .nothing:
                    break
                case .add(let path, let value):
                    try document.add(value, at: path)
                case .remove(let path):
                    try document.remove(at: path)
                case .replace(let path, let value):
                    try document.replace(at: path, with: value)
                case .move(let from, let to, let putBack):
                    let value: JSONValue
                    if let putBack {
                        value = try document.replace(at: from, with: putBack)
                    } else {
                        value = try document.remove(at: from)
                    }
                    try document.add(value, at: to)
                }
            } catch {
                preconditionFailure("undoing a JSON Patch operation failed: \(error)")
            }
        }
    }
}

extension JSONValue.AddOutcome {
    /// Where the added value ended up: `path`, with a `-` resolved to the index it took.
    func location(for path: JSONPointer) -> JSONPointer {
        guard case .insertedElement(let index) = self, path.lastToken == "-", let parent = path.parent else {
            return path
        }
        return parent.appending(String(index))
    }
}

// MARK: - JSON form

extension JSONPatch {
    /// Reads a patch from its JSON form: an array of operation objects such as
    /// `{"op": "add", "path": "/a", "value": 1}`. Members an operation does not use are ignored
    /// (RFC 6902 section 4).
    ///
    /// - Parameter json: The patch document.
    /// - Throws: `.invalidPatch` when the document is not an array of well-formed operations;
    ///   the message names the operation's index, for example `"operation 2: missing 'path'"`.
    public init(_ json: JSONValue) throws(JSONError) {
        guard case .array(let elements) = json else {
            throw JSONError(.invalidPatch, "a JSON Patch must be an array of operations, not \(json.typeName)")
        }
        var operations: [Operation] = []
        operations.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            operations.append(try Operation(element, index: index))
        }
        self.init(operations)
    }

    /// The patch's JSON form, which `init(_:)` reads back to an equal patch.
    public var jsonValue: JSONValue {
        .array(operations.map(\.jsonValue))
    }
}

extension JSONPatch.Operation {
    fileprivate init(_ json: JSONValue, index: Int) throws(JSONError) {
        func failure(_ message: String) -> JSONError {
            JSONError(.invalidPatch, "operation \(index): \(message)")
        }
        guard case .object(let members) = json else {
            throw failure("must be an object, not \(json.typeName)")
        }
        // One pass over the members instead of a hashed lookup per name: replaying a log parses
        // millions of these, and hashing the keys was most of the cost.
        var op: JSONValue?, path: JSONValue?, from: JSONValue?, value: JSONValue?
        for (key, member) in members {
            switch key {
            case "op": op = member
            case "path": path = member
            case "from": from = member
            case "value": value = member
            default: continue  // RFC 6902 section 4: other members are ignored
            }
        }
        func pointer(_ name: String, _ member: JSONValue?) throws(JSONError) -> JSONPointer {
            guard let member else { throw failure("missing '\(name)'") }
            guard case .string(let string) = member else {
                throw failure("'\(name)' must be a string, not \(member.typeName)")
            }
            do {
                return try JSONPointer(string)
            } catch {
                throw failure("invalid '\(name)': \(error.message)")
            }
        }
        func required() throws(JSONError) -> JSONValue {
            // A present `"value": null` is a value; only a missing member is an error.
            guard let value else { throw failure("missing 'value'") }
            return value
        }
        guard let op else { throw failure("missing 'op'") }
        guard case .string(let name) = op else { throw failure("'op' must be a string, not \(op.typeName)") }
        switch name {
        case "add": self = .add(path: try pointer("path", path), value: try required())
        case "remove": self = .remove(path: try pointer("path", path))
        case "replace": self = .replace(path: try pointer("path", path), value: try required())
        case "move": self = .move(from: try pointer("from", from), path: try pointer("path", path))
        case "copy": self = .copy(from: try pointer("from", from), path: try pointer("path", path))
        case "test": self = .test(path: try pointer("path", path), value: try required())
        default:
            throw failure("unknown op '\(name)' (expected add, remove, replace, move, copy or test)")
        }
    }

    /// The operation as an RFC 6902 operation object.
    public var jsonValue: JSONValue {
        var members: JSONObject = ["op": .string(name), "path": .string(path.description)]
        switch self {
        case .add(_, let value), .replace(_, let value), .test(_, let value):
            members["value"] = value
        case .move(let from, _), .copy(let from, _):
            members["from"] = .string(from.description)
        case .remove:
            break
        }
        return .object(members)
    }
}

extension JSONValue {
    /// How many values this one holds, itself included, counting no further than `limit` (so a
    /// huge value is not walked to the end).
    public func valueCount(upTo limit: Int) -> Int {
        var count = 0
        var stack: [JSONValue] = [self]
        while let next = stack.popLast() {
            count += 1
            if count >= limit { return count }
            switch next {
            case .array(let elements): stack.append(contentsOf: elements)
            case .object(let members): stack.append(contentsOf: members.values)
            default: break
            }
        }
        return count
    }
}
