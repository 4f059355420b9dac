extension JSONPatch {
    /// What each operation overwrote or took away from `document`, the document the patch applies
    /// to: so that a change reads `old → new` and a removal `(was …)`, as `reel show` prints them
    /// and the time-travel page shows them.
    ///
    /// A `replace` or `remove` gives the value it found at its path; an `add` gives the value it
    /// replaced when it lands on an existing object member or the root (in an array it inserts,
    /// replacing nothing); `move`, `copy` and `test` give `nil`. Each operation's old value is
    /// looked up in the document as it stands before that operation (the patch is replayed on a
    /// copy), so an earlier operation that shifted array elements does not make a later one show
    /// the wrong value. If the patch does not apply to `document`, the failing operation and those
    /// after it give `nil`.
    ///
    /// - Parameter document: The document before the patch.
    /// - Returns: One entry per operation, in patch order.
    public func overwrittenValues(in document: JSONValue) -> [JSONValue?] {
        var document: JSONValue? = document
        var values: [JSONValue?] = []
        values.reserveCapacity(operations.count)
        for operation in operations {
            values.append(document.flatMap(operation.overwrittenValue(in:)))
            guard var current = document else { continue }
            // Leave `current` as the only reference, so applying edits in place.
            document = nil
            do throws(JSONError) {
                try JSONPatch([operation]).apply(to: &current)
                document = current
            } catch {
                // The patch was not made for this document: stop guessing old values.
            }
        }
        return values
    }
}

extension JSONPatch.Operation {
    /// The value this operation overwrites or removes in `document`, if any.
    func overwrittenValue(in document: JSONValue) -> JSONValue? {
        switch self {
        case .replace(let path, _), .remove(let path):
            return document.value(at: path)
        case .add(let path, _):
            // At the root or in an object an add replaces what is there; in an array it inserts.
            if let parent = path.parent, case .array = document.value(at: parent) { return nil }
            return document.value(at: path)
        case .move, .copy, .test:
            return nil
        }
    }
}
