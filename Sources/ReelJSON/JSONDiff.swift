// Computing a JSON Patch between two documents, and moving a patch under a prefix.

extension JSONPatch {
    /// A small patch that turns `source` into `target`: applying it to `source` gives a value
    /// equal to `target`.
    ///
    /// Objects are compared member by member, in key order (by UTF-8 bytes) so that equal
    /// inputs always give the same patch: a member only in `source` is removed, one only in
    /// `target` is added, one in both is diffed recursively. Arrays keep their common first and
    /// last elements, diff the overlapping middle element by element, then remove the extra
    /// elements (highest index first, so the indices stay valid) or add the missing ones. Values
    /// of different types, and different scalars, are replaced. Equal values give no operation
    /// (with `JSONValue.==`, so `1` and `1.0` count as equal). No `move` or `copy` is produced.
    ///
    /// Unchanged subtrees that share storage with the other document (as successive versions
    /// of an edited state do) are skipped without being walked, because array and object
    /// equality first checks whether both sides are the same buffer.
    ///
    /// - Parameters:
    ///   - source: The document before.
    ///   - target: The document after.
    public init(from source: JSONValue, to target: JSONValue) {
        var builder = DiffBuilder()
        builder.diff(source, target)
        self.init(builder.operations)
    }

    /// This patch with every `path` and `from` moved under `pointer`.
    ///
    /// A patch computed between two values of the slice at `pointer` becomes, prefixed, a
    /// patch for the whole document.
    ///
    /// - Parameter pointer: Where the patched slice sits in the larger document.
    /// - Returns: The rebased patch; the same patch for `.root`.
    public func prefixed(with pointer: JSONPointer) -> JSONPatch {
        guard !pointer.isRoot else { return self }
        func rebase(_ path: JSONPointer) -> JSONPointer {
            JSONPointer(tokens: pointer.tokens + path.tokens)
        }
        return JSONPatch(operations.map { operation in
            switch operation {
            case .add(let path, let value): .add(path: rebase(path), value: value)
            case .remove(let path): .remove(path: rebase(path))
            case .replace(let path, let value): .replace(path: rebase(path), value: value)
            case .move(let from, let path): .move(from: rebase(from), path: rebase(path))
            case .copy(let from, let path): .copy(from: rebase(from), path: rebase(path))
            case .test(let path, let value): .test(path: rebase(path), value: value)
            }
        })
    }
}

/// Walks two documents side by side, keeping the current path as a stack of unescaped tokens
/// so that no pointer is built (or escaped) until an operation is emitted.
private struct DiffBuilder {
    var operations: [JSONPatch.Operation] = []
    var tokens: [String] = []

    var path: JSONPointer { JSONPointer(tokens: tokens) }

    mutating func diff(_ source: JSONValue, _ target: JSONValue) {
        switch (source, target) {
        case (.object(let before), .object(let after)):
            diffObjects(before, after)
        case (.array(let before), .array(let after)):
            diffArrays(before, after)
        default:
            if source != target {
                operations.append(.replace(path: path, value: target))
            }
        }
    }

    private mutating func diffObjects(_ before: JSONObject, _ after: JSONObject) {
        // Only the keys that changed are sorted: an edit to one member of a large object costs
        // one pass of lookups, not a sort of every key. UTF-8 byte order is the order of the
        // canonical serialization, so the patch lists members as the documents print them.
        var changed: [String] = []
        for (key, old) in before where after[key] != old {
            changed.append(key)
        }
        for key in after.keys where before[key] == nil {
            changed.append(key)
        }
        changed.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for key in changed {
            tokens.append(key)
            defer { tokens.removeLast() }
            switch (before[key], after[key]) {
            case (let old?, let new?): diff(old, new)
            case (_?, nil): operations.append(.remove(path: path))
            case (nil, let new?): operations.append(.add(path: path, value: new))
            case (nil, nil): break
            }
        }
    }

    private mutating func diffArrays(_ before: [JSONValue], _ after: [JSONValue]) {
        var prefix = 0
        while prefix < before.count, prefix < after.count, before[prefix] == after[prefix] {
            prefix += 1
        }
        var suffix = 0
        while suffix < before.count - prefix, suffix < after.count - prefix,
            before[before.count - 1 - suffix] == after[after.count - 1 - suffix]
        {
            suffix += 1
        }
        let oldMiddle = before.count - prefix - suffix
        let newMiddle = after.count - prefix - suffix
        let overlap = min(oldMiddle, newMiddle)
        for offset in 0..<overlap {
            tokens.append(String(prefix + offset))
            diff(before[prefix + offset], after[prefix + offset])
            tokens.removeLast()
        }
        if oldMiddle > overlap {
            for index in (prefix + overlap..<prefix + oldMiddle).reversed() {
                tokens.append(String(index))
                operations.append(.remove(path: path))
                tokens.removeLast()
            }
        } else {
            for index in prefix + overlap..<prefix + newMiddle {
                tokens.append(String(index))
                operations.append(.add(path: path, value: after[index]))
                tokens.removeLast()
            }
        }
    }
}
