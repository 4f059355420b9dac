/// What one edit of a JSON document changed, as JSON Pointers (their string form).
///
/// A pointer *changed* when the value there differs before and after the edit, absence counting
/// as a value. Every ancestor of a changed pointer changed too, and is listed. Where following a
/// change further would list too many pointers (an array shifted under 100,000 elements, a subtree
/// of thousands of members added at once), the change is *unfollowed* below a pointer: the pointer
/// itself is listed as changed, and any pointer under it may have changed or not. Whoever answers
/// "did P change?" from these sets answers *yes* when P is in ``changed``, *no* when it is not and
/// no proper ancestor of P is in ``unfollowed``, and must look at the two documents otherwise.
public struct JSONChanges: Sendable, Equatable {
    /// Pointers whose value changed, with all their ancestors.
    public var changed: Set<String> = []
    /// Changed pointers under which the change was not followed.
    public var unfollowed: Set<String> = []

    public init(changed: Set<String> = [], unfollowed: Set<String> = []) {
        self.changed = changed
        self.unfollowed = unfollowed
    }

    public var isEmpty: Bool { changed.isEmpty }
}

/// Builds the ``JSONChanges`` of one edit, from the values it replaces and the values that replace
/// them, within a budget of pointers (``budget``): past it, changes below a pointer are left
/// unfollowed rather than listed one by one.
///
/// Pointers are passed as their escaped string form (``JSONPointer/description``) and extended one
/// token at a time, so a deep path costs one string per level, not one per ancestor per record.
public struct JSONChangeRecorder: Sendable {
    public private(set) var changes = JSONChanges()
    /// How many more pointers may be listed below the ones recorded so far.
    public private(set) var budget: Int

    /// The default budget of one action: what an ordinary action lists is far below it, and an
    /// index entry per pointer stays within a few kilobytes per action.
    public static let defaultBudget = 512

    public init(budget: Int = defaultBudget) {
        self.budget = budget
    }

    /// Records that the value at `tokens` goes from `old` to `new` (`nil`: absent). Nothing is
    /// recorded when they are equal.
    public mutating func record(at tokens: [String], from old: JSONValue?, to new: JSONValue?) {
        guard old != new else { return }
        let pointer = markChanged(tokens)
        follow(pointer, from: old, to: new)
    }

    /// Records that the array at `tokens`, whose elements were `old`, now has `newCount` elements,
    /// equal to the old ones before `start` and given by `element` from `start` on (an insertion or
    /// a removal shifts every element after it). The array itself changed.
    public mutating func recordShift(
        at tokens: [String], old: [JSONValue], start: Int, newCount: Int, element: (Int) -> JSONValue?
    ) {
        let pointer = markChanged(tokens)
        let end = max(old.count, newCount)
        guard end - start <= budget else {
            changes.unfollowed.insert(pointer)
            return
        }
        budget -= end - start
        for index in start..<end {
            let before: JSONValue? = index < old.count ? .some(old[index]) : .none
            let after: JSONValue? = index < newCount ? element(index) : .none
            guard before != after else { continue }
            let child = Self.appending(String(index), to: pointer)
            changes.changed.insert(child)
            follow(child, from: before, to: after)
        }
    }

    /// Records that the value at `tokens` changed in ways not followed below it.
    public mutating func recordUnfollowed(at tokens: [String]) {
        changes.unfollowed.insert(markChanged(tokens))
    }

    /// Marks `tokens` and every ancestor as changed; returns the pointer's string.
    private mutating func markChanged(_ tokens: [String]) -> String {
        var pointer = ""
        changes.changed.insert(pointer)
        for token in tokens {
            pointer = Self.appending(token, to: pointer)
            changes.changed.insert(pointer)
        }
        return pointer
    }

    /// Lists what differs under `pointer` (already marked changed) between `old` and `new`.
    private mutating func follow(_ pointer: String, from old: JSONValue?, to new: JSONValue?) {
        var differing: [(token: String, old: JSONValue?, new: JSONValue?)] = []
        switch (old, new) {
        case let (.object(a)?, .object(b)?):
            for (key, value) in a where b[key] != value { differing.append((key, value, b[key])) }
            for (key, value) in b where a[key] == nil { differing.append((key, .none, value)) }
        case let (.array(a)?, .array(b)?):
            for index in 0..<max(a.count, b.count) {
                let before: JSONValue? = index < a.count ? .some(a[index]) : .none
                let after: JSONValue? = index < b.count ? .some(b[index]) : .none
                if before != after { differing.append((String(index), before, after)) }
            }
        default:
            // Different kinds, or one side absent or a scalar: every child of either side is a
            // child of one side only, except for a token both resolve (an object member "0" and
            // an array's first element).
            for (token, value) in Self.children(of: old) { differing.append((token, value, Self.child(of: new, token))) }
            for (token, value) in Self.children(of: new) where Self.child(of: old, token) == nil {
                differing.append((token, .none, value))
            }
            differing.removeAll { $0.old == $0.new }
        }
        guard !differing.isEmpty else { return }
        guard differing.count <= budget else {
            changes.unfollowed.insert(pointer)
            return
        }
        budget -= differing.count
        for entry in differing {
            let child = Self.appending(entry.token, to: pointer)
            changes.changed.insert(child)
            follow(child, from: entry.old, to: entry.new)
        }
    }

    private static func children(of value: JSONValue?) -> [(String, JSONValue)] {
        switch value {
        case .object(let members)?: members.map { ($0.key, $0.value) }
        case .array(let elements)?: elements.enumerated().map { (String($0.offset), $0.element) }
        default: []
        }
    }

    private static func child(of value: JSONValue?, _ token: String) -> JSONValue? {
        switch value {
        case .object(let members)?: members[token]
        case .array(let elements)?: JSONPointer.arrayIndex(token).flatMap { (index: Int) -> JSONValue? in index < elements.count ? .some(elements[index]) : .none }
        default: Optional<JSONValue>.none
        }
    }

    /// `pointer` followed by `token`, escaped (RFC 6901).
    public static func appending(_ token: String, to pointer: String) -> String {
        var result = pointer
        JSONPointer.append(token, to: &result)
        return result
    }
}
