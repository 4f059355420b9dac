// Reading and in-place editing of a JSON document at a JSON Pointer.
//
// Every mutation here works on the document in place. A container is edited by moving its
// payload out (`takeMembers`/`takeElements`, which leave `.null` behind so the payload holds the
// only reference), editing it, and putting it back. Without that step the payload would be shared
// by the enum and the local copy, and the first write would copy the whole array or object: one
// edit of a 100,000-member object would cost 100,000 member copies instead of one insert.
//
// Each mutation checks everything that can fail before it changes anything, so a thrown error
// leaves the document exactly as it was. `JSONPatch` relies on that for its undo log.

extension JSONValue {
    /// The value `pointer` refers to.
    ///
    /// - Parameter pointer: Where to look; `.root` is the whole value.
    /// - Returns: The value there, or `nil` when nothing is there (a missing member, an index out
    ///   of range or not an index, `"-"`, or a step into a number, string, boolean or null).
    public func value(at pointer: JSONPointer) -> JSONValue? {
        var current = self
        for token in pointer.tokens {
            switch current {
            case .object(let members):
                guard let member = members[token] else { return nil }
                current = member
            case .array(let elements):
                guard let index = JSONPointer.arrayIndex(token), index < elements.count else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// Adds a value with JSON Patch `add` semantics (RFC 6902 section 4.1).
    ///
    /// At the root the whole value is replaced. In an object the member is added, or replaced if
    /// it exists. In an array the value is inserted before the given index (`0...count`), or
    /// appended for `"-"`.
    ///
    /// - Parameters:
    ///   - value: The value to put in.
    ///   - pointer: Where to put it; its parent must exist.
    /// - Throws: `.pathNotFound` when the parent does not exist or the index is past the end,
    ///   `.typeMismatch` when the parent is not an object or array, `.invalidPointer` when the
    ///   last token is not an array index for an array parent. Nothing is changed on error.
    public mutating func add(_ value: JSONValue, at pointer: JSONPointer) throws(JSONError) {
        _ = try addReportingOutcome(value, at: pointer)
    }

    /// Removes the value at `pointer` (RFC 6902 section 4.2); array elements after it shift down.
    ///
    /// The root cannot be removed: a document always has a value, and quietly turning the state
    /// into `null` would hide a mistaken path. Replace the root instead.
    ///
    /// - Parameter pointer: The value to remove; it must exist.
    /// - Returns: The removed value.
    /// - Throws: `.invalidPatch` for the root, `.pathNotFound` when there is no value there,
    ///   `.typeMismatch` when its parent is not an object or array, `.invalidPointer` when the
    ///   last token is not an array index for an array parent. Nothing is changed on error.
    @discardableResult
    public mutating func remove(at pointer: JSONPointer) throws(JSONError) -> JSONValue {
        guard let token = pointer.lastToken else {
            throw JSONError(.invalidPatch, "cannot remove the root value; replace it instead")
        }
        let depth = pointer.tokens.count - 1
        return try withValue(at: pointer, depth: 0, end: depth) { parent throws(JSONError) in
            // Each `defer` puts the container back, also when a check below throws.
            if var members = parent.takeMembers() {
                defer { parent = .object(members) }
                guard let index = members.index(forKey: token) else {
                    throw JSONError.noMember(token, at: pointer, depth: depth)
                }
                return members.remove(at: index).value
            }
            if var elements = parent.takeElements() {
                defer { parent = .array(elements) }
                let index = try Self.existingIndex(token, count: elements.count, pointer, depth: depth)
                return elements.remove(at: index)
            }
            throw JSONError.notContainer(parent, pointer, depth: depth, code: .typeMismatch)
        }
    }

    /// Replaces the value at `pointer` (RFC 6902 section 4.3).
    ///
    /// - Parameters:
    ///   - pointer: The value to replace; it must exist. `.root` replaces the whole value.
    ///   - value: The new value.
    /// - Returns: The value that was there.
    /// - Throws: As ``modify(at:_:)``. Nothing is changed on error.
    @discardableResult
    public mutating func replace(at pointer: JSONPointer, with value: JSONValue) throws(JSONError) -> JSONValue {
        try modify(at: pointer) { target in
            let old = target
            target = value
            return old
        }
    }

    /// Edits the value at `pointer` in place, without copying it or anything around it.
    ///
    /// The target is uniquely referenced while `body` runs when the document is, so `body` can
    /// grow a large array or object at no more than the cost of the change itself.
    ///
    /// - Parameters:
    ///   - pointer: The value to edit; it must exist. `.root` edits the whole value.
    ///   - body: The edit. If it throws, whatever it already changed stays changed.
    /// - Returns: What `body` returns.
    /// - Throws: `.pathNotFound` when there is no value there, `.typeMismatch` when its parent is
    ///   not an object or array, `.invalidPointer` when a token is not an array index for an
    ///   array, or what `body` throws.
    public mutating func modify<R>(
        at pointer: JSONPointer,
        _ body: (inout JSONValue) throws(JSONError) -> R
    ) throws(JSONError) -> R {
        try withValue(at: pointer, depth: 0, end: pointer.tokens.count, body)
    }
}

// MARK: - What an add did

extension JSONValue {
    /// What an `add` did: what `JSONPatch` records to undo it, and what the stock reducer records
    /// as the change it made (``JSONChangeRecorder``).
    public enum AddOutcome: Sendable {
        /// The root or an existing object member was replaced; the old value is kept.
        case replaced(JSONValue)
        /// A new object member was created.
        case insertedMember
        /// A new array element was inserted at this index (the `-` token resolved).
        case insertedElement(Int)
    }

    /// `add(_:at:)`, telling what it did. Nothing is changed on error.
    public mutating func addReportingOutcome(_ value: JSONValue, at pointer: JSONPointer) throws(JSONError) -> AddOutcome {
        guard let token = pointer.lastToken else {
            let old = self
            self = value
            return .replaced(old)
        }
        let depth = pointer.tokens.count - 1
        return try withValue(at: pointer, depth: 0, end: depth) { parent throws(JSONError) in
            if var members = parent.takeMembers() {
                defer { parent = .object(members) }
                return members.updateValue(value, forKey: token).map(AddOutcome.replaced) ?? .insertedMember
            }
            if var elements = parent.takeElements() {
                defer { parent = .array(elements) }
                let index: Int
                if token == "-" {
                    index = elements.count
                } else {
                    index = try Self.index(token, pointer, depth: depth)
                    guard index <= elements.count else {
                        throw JSONError.outOfRange(pointer, count: elements.count, allowingEnd: true)
                    }
                }
                elements.insert(value, at: index)
                return .insertedElement(index)
            }
            throw JSONError.notContainer(parent, pointer, depth: depth, code: .typeMismatch)
        }
    }

    /// Runs `body` on the value at `pointer.tokens[..<end]`, reached from `self` (which sits at
    /// `pointer.tokens[..<depth]`), keeping every container on the way uniquely referenced.
    ///
    /// A failed step throws before anything is changed; the `defer`s put every container back
    /// whether `body` returns or throws.
    mutating func withValue<R>(
        at pointer: JSONPointer,
        depth: Int,
        end: Int,
        _ body: (inout JSONValue) throws(JSONError) -> R
    ) throws(JSONError) -> R {
        if depth == end { return try body(&self) }
        let token = pointer.tokens[depth]
        if let taken = takeMembers() {
            // Looked up in a constant: in the variable edited below, the lookup retained and
            // released both of the object's arrays at every level of every walk.
            guard let index = taken.index(forKey: token) else {
                self = .object(taken)
                throw JSONError.noMember(token, at: pointer, depth: depth)
            }
            var members = consume taken
            defer { self = .object(members) }
            // The member is yielded in place, so it stays uniquely referenced too.
            return try members[valueAt: index].withValue(at: pointer, depth: depth + 1, end: end, body)
        }
        if var elements = takeElements() {
            defer { self = .array(elements) }
            let index = try Self.existingIndex(token, count: elements.count, pointer, depth: depth)
            return try elements[index].withValue(at: pointer, depth: depth + 1, end: end, body)
        }
        // A scalar where the target's parent should be is the wrong type; a scalar further up
        // means the parent itself does not exist.
        let code: JSONError.Code = depth == pointer.tokens.count - 1 ? .typeMismatch : .pathNotFound
        throw JSONError.notContainer(self, pointer, depth: depth, code: code)
    }

    /// Moves an object's members out and leaves `.null`; `nil` (and `self` untouched) for any
    /// other value. The caller must put the members back.
    ///
    /// This must be a `guard case`, not a `switch`: a `switch` keeps its subject, a second
    /// reference to the payload, alive through the whole case body, so an edit made there
    /// copies the container even after `self = .null` (measured with Swift 6.3: a `switch`
    /// version costs 430 µs per edit of a 10,000-member object, this one 60 ns).
    mutating func takeMembers() -> JSONObject? {
        guard case .object(let members) = self else { return nil }
        self = .null
        return members
    }

    /// Moves an array's elements out and leaves `.null`; `nil` (and `self` untouched) for any
    /// other value. See ``takeMembers()`` for why this is not a `switch`.
    mutating func takeElements() -> [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        self = .null
        return elements
    }

    /// The index `pointer.tokens[depth]` names in an array of `count` elements, which must exist.
    private static func existingIndex(_ token: String, count: Int, _ pointer: JSONPointer, depth: Int) throws(JSONError) -> Int {
        if token == "-" {
            throw JSONError(
                .pathNotFound,
                "\(pointer.prefix(depth + 1)) refers past the end of the array (array has \(count) elements); '-' can only be used to add"
            )
        }
        let index = try index(token, pointer, depth: depth)
        guard index < count else { throw JSONError.outOfRange(pointer.prefix(depth + 1), count: count, allowingEnd: false) }
        return index
    }

    /// The index a token names, or `.invalidPointer` when it is not one (RFC 6901 section 4).
    private static func index(_ token: String, _ pointer: JSONPointer, depth: Int) throws(JSONError) -> Int {
        guard let index = JSONPointer.arrayIndex(token) else {
            throw JSONError(
                .invalidPointer,
                "'\(token)' is not an array index at \(pointer.prefix(depth).displayName) (use 0, digits without a leading zero, or '-' to append)"
            )
        }
        return index
    }
}

extension JSONError {
    static func noMember(_ token: String, at pointer: JSONPointer, depth: Int) -> JSONError {
        JSONError(.pathNotFound, "no member '\(token)' at \(pointer.prefix(depth).displayName)")
    }

    static func outOfRange(_ pointer: JSONPointer, count: Int, allowingEnd: Bool) -> JSONError {
        let limit = allowingEnd ? " (the largest index to add at is \(count))" : ""
        return JSONError(
            .pathNotFound,
            "\(pointer) is out of range (array has \(count) element\(count == 1 ? "" : "s"))\(limit)"
        )
    }

    static func notContainer(_ value: JSONValue, _ pointer: JSONPointer, depth: Int, code: Code) -> JSONError {
        JSONError(
            code,
            "cannot reach \(pointer): \(pointer.prefix(depth).displayName) is \(value.isNull ? "null" : "a \(value.typeName)"), not an object or array"
        )
    }
}
