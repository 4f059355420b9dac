/// JSON Merge Patch (RFC 7396): a partial document that says what to change by example.
///
/// An object patch merges member by member: a `null` member removes that member of the target,
/// any other member is merged into it (created if absent). Any other patch (an array, a string,
/// a number…) replaces the target whole. Merging cannot fail.
public enum JSONMergePatch {
    /// Merges `patch` into `target` in place (RFC 7396 section 2).
    ///
    /// Only the members the patch names are touched: the target's other members, however many,
    /// are neither copied nor visited.
    ///
    /// - Parameters:
    ///   - patch: The merge patch.
    ///   - target: The document to change.
    public static func apply(_ patch: JSONValue, to target: inout JSONValue) {
        guard case .object(let changes) = patch else {
            target = patch
            return
        }
        // Moving the members out leaves them uniquely referenced, so edits happen in place. A
        // non-object target becomes an empty object before the merge (RFC 7396 section 2).
        var members = target.takeMembers() ?? [:]
        for (key, change) in changes {
            if change.isNull {
                members.removeValue(forKey: key)
            } else if let index = members.index(forKey: key) {
                apply(change, to: &members.values[index])
            } else {
                // Merging into nothing: this is how nulls nested inside a new member are
                // dropped rather than stored.
                var fresh = JSONValue.null
                apply(change, to: &fresh)
                members[key] = fresh
            }
        }
        target = .object(members)
    }
}
