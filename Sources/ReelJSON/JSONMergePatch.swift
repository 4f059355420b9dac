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
                apply(change, to: &members[valueAt: index])
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

    /// ``apply(_:to:)``, recording into `recorder`'s current edit what the merge changed, the
    /// target being at `node` of the recorder's tree: each member the patch names is recorded
    /// where it lands, an object merged into an object member by member, anything else as the
    /// value it replaces. The same walk applies and records, where predicting the change first
    /// walked the patch over the target once more; each level's node is found once, from its
    /// parent's, rather than from the root for every member.
    public static func apply(
        _ patch: JSONValue, to target: inout JSONValue, at node: PointerTree.Node = PointerTree.root, recordingInto recorder: inout JSONChangeRecorder
    ) {
        guard case .object(let changes) = patch, case .object = target else {
            // Replaced whole, or an object patch merged into a target that is no object (as into
            // an empty one).
            var merged = JSONValue.null
            apply(patch, to: &merged)
            let old = target
            target = merged
            recorder.record(atNode: node, from: old, to: merged)
            return
        }
        var members = target.takeMembers()!  // uniquely referenced: edited in place
        for (key, change) in changes {
            if change.isNull {
                if let old = members.removeValue(forKey: key) { recorder.record(key, below: node, from: old, to: .none) }
            } else if case .object = change, let index = members.index(forKey: key), case .object = members[valueAt: index] {
                apply(change, to: &members[valueAt: index], at: recorder.intern(key, below: node), recordingInto: &recorder)
            } else {
                var merged = JSONValue.null
                apply(change, to: &merged)
                let old = members.updateValue(merged, forKey: key)
                recorder.record(key, below: node, from: old, to: merged)
            }
        }
        target = .object(members)
    }
}
