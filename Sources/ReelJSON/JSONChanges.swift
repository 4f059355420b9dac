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

/// Builds what each of a run of edits changed (one at a time: ``startEdit()`` between them), from
/// the values it replaces and the values that replace them, within a budget of pointers per edit
/// (``budget``): past it, changes below a pointer are left unfollowed rather than listed one by
/// one.
///
/// Pointers are interned in ``tree`` for the whole run, so the edits of one commit that change
/// the same pointers (every edit changes the root) name them by number: ``changedNodes`` and
/// ``unfollowedNodes`` list the current edit's, each once.
public struct JSONChangeRecorder: Sendable {
    // (`tree` and `marks` are set by the initializer only: a default value would be made, then
    // replaced.)
    public private(set) var tree: PointerTree
    /// The pointers the current edit changed, each ancestor included, each once.
    public private(set) var changedNodes: [PointerTree.Node] = []
    /// The changed pointers under which the current edit's change was not followed.
    public private(set) var unfollowedNodes: [PointerTree.Node] = []
    /// How many more pointers the current edit may list below the ones recorded so far.
    public private(set) var budget: Int
    private let editBudget: Int
    /// Per node, the edit that last marked it changed (`edit` is the current one): marking is a
    /// comparison, not a set insertion.
    private var marks: [UInt32]
    private var edit: UInt32 = 1
    /// The node of each path of two or more tokens that ``record(at:from:to:)`` was given once
    /// the tree is large (``pathCacheFromNodes``): an app's actions change the same leaves again
    /// and again, and a path met before is then found with one lookup instead of one per token
    /// (its ancestors are marked through ``PointerTree/parent(of:)``). Cold lookups deep in a
    /// large tree were a fifth of building the index. A small tree (a commit's) stays in the
    /// cache and needs none. Keyed by the path's hash; the path itself is read back from the tree.
    private var nodesByPath = NodeTable()
    private static let pathCacheFromNodes = 4_096

    /// The default budget of one action: what an ordinary action lists is far below it, and an
    /// index entry per pointer stays within a few kilobytes per action.
    public static let defaultBudget = 512

    /// - Parameter capacity: How many pointers the recorder's tree should have room for at once
    ///   (``PointerTree/init(capacity:)``).
    public init(budget: Int = defaultBudget, capacity: Int = 0) {
        self.budget = budget
        editBudget = budget
        tree = PointerTree(capacity: capacity)
        marks = []
        marks.reserveCapacity(capacity + 1)
        marks.append(0)
    }

    /// Forgets what the current edit recorded (the pointers stay interned) and starts another.
    public mutating func startEdit() {
        changedNodes.removeAll(keepingCapacity: true)
        unfollowedNodes.removeAll(keepingCapacity: true)
        budget = editBudget
        edit &+= 1
        if edit == 0 {
            for index in marks.indices { marks[index] = 0 }
            edit = 1
        }
    }

    /// What the current edit changed, as pointer strings.
    public var changes: JSONChanges {
        JSONChanges(
            changed: Set(changedNodes.map { tree.pointer(of: $0) }),
            unfollowed: Set(unfollowedNodes.map { tree.pointer(of: $0) })
        )
    }

    /// Whether the current edit changed the value at `path` for certain: `true` when it is listed,
    /// `false` when neither it nor an ancestor under which a change went unfollowed is, `nil`
    /// when only the documents can tell.
    public func changed(_ path: JSONPointer) -> Bool? {
        if let node = tree.existing(path.tokens), marks[Int(node)] == edit { return true }
        guard !unfollowedNodes.isEmpty else { return false }
        var node = PointerTree.root
        for token in path.tokens {
            if unfollowedNodes.contains(node) { return nil }
            guard let next = tree.existing(CollectionOfOne(token), from: node) else { return false }
            node = next
        }
        return false
    }

    /// Records that the value at `tokens` goes from `old` to `new` (`nil`: absent). Nothing is
    /// recorded when they are equal.
    public mutating func record(at tokens: [String], from old: JSONValue?, to new: JSONValue?) {
        var differing: [Child] = []
        guard Self.compare(old, new, differing: &differing) else { return }
        follow(markChanged(tokens), differing)
    }

    /// ``record(at:from:to:)`` for the pointer of `node` (from ``intern(_:below:)``), for a caller
    /// that walks down a document token by token and knows each level's node.
    public mutating func record(atNode node: PointerTree.Node, from old: JSONValue?, to new: JSONValue?) {
        var differing: [Child] = []
        guard Self.compare(old, new, differing: &differing) else { return }
        markWithAncestors(node)
        follow(node, differing)
    }

    /// ``record(atNode:from:to:)`` for `token` below `parent`, interned only when the value there
    /// changed.
    public mutating func record(_ token: String, below parent: PointerTree.Node, from old: JSONValue?, to new: JSONValue?) {
        var differing: [Child] = []
        guard Self.compare(old, new, differing: &differing) else { return }
        let node = child(of: parent, token)
        markWithAncestors(node)
        follow(node, differing)
    }

    /// Records that the array at `tokens`, whose elements were `old`, now has `newCount` elements,
    /// equal to the old ones before `start` and given by `element` from `start` on (an insertion or
    /// a removal shifts every element after it). The array itself changed.
    public mutating func recordShift(
        at tokens: [String], old: [JSONValue], start: Int, newCount: Int, element: (Int) -> JSONValue?
    ) {
        let node = markChanged(tokens)
        let end = max(old.count, newCount)
        guard end - start <= budget else {
            markUnfollowed(node)
            return
        }
        budget -= end - start
        for index in start..<end {
            let before: JSONValue? = index < old.count ? .some(old[index]) : .none
            let after: JSONValue? = index < newCount ? element(index) : .none
            var differing: [Child] = []
            guard Self.compare(before, after, differing: &differing) else { continue }
            follow(mark(child(of: node, String(index))), differing)
        }
    }

    /// Records that the value at `tokens` changed in ways not followed below it.
    public mutating func recordUnfollowed(at tokens: [String]) {
        markUnfollowed(markChanged(tokens))
    }

    /// Marks `tokens` and every ancestor as changed; returns its node.
    private mutating func markChanged(_ tokens: [String]) -> PointerTree.Node {
        let cached = tokens.count >= 2 && tree.count >= Self.pathCacheFromNodes
        let hash = cached ? PointerTree.hash(of: tokens) : 0
        if cached, let node = tree.node(of: tokens, hash: hash, in: nodesByPath) {
            markWithAncestors(node)
            return node
        }
        var node = mark(PointerTree.root)
        for token in tokens { node = mark(child(of: node, token)) }
        if cached { nodesByPath.insert(node, hash: hash) }
        return node
    }

    /// Marks `node` and every ancestor not marked yet (an ancestor of a marked node is marked).
    private mutating func markWithAncestors(_ node: PointerTree.Node) {
        var current = node
        while marks[Int(current)] != edit {
            marks[Int(current)] = edit
            changedNodes.append(current)
            guard let parent = tree.parent(of: current) else { return }
            current = parent
        }
    }

    /// `token` below `node`, interned in ``tree`` (for a caller that merges another tree into it,
    /// or walks down a document and records with ``record(atNode:from:to:)``).
    public mutating func intern(_ token: String, below node: PointerTree.Node) -> PointerTree.Node {
        child(of: node, token)
    }

    private mutating func child(of node: PointerTree.Node, _ token: String) -> PointerTree.Node {
        let child = tree.child(of: node, token)
        if Int(child) == marks.count { marks.append(0) }
        return child
    }

    @discardableResult
    private mutating func mark(_ node: PointerTree.Node) -> PointerTree.Node {
        if marks[Int(node)] != edit {
            marks[Int(node)] = edit
            changedNodes.append(node)
        }
        return node
    }

    private mutating func markUnfollowed(_ node: PointerTree.Node) {
        if !unfollowedNodes.contains(node) { unfollowedNodes.append(node) }
    }

    /// A child (member or element) whose value differs between the two documents.
    private typealias Child = (token: String, old: JSONValue?, new: JSONValue?)

    /// Whether `old` and `new` differ (absence counting as a value), and into `differing` the
    /// children that differ, when either has any. Two objects are compared in one pass over the
    /// old members with a lookup each (and over the new ones only when some are new): equality
    /// and the list of what differs come from the same lookups.
    private static func compare(_ old: JSONValue?, _ new: JSONValue?, differing: inout [Child]) -> Bool {
        // A scalar replacing a scalar (most edits) has nothing below it.
        guard old?.hasChildren == true || new?.hasChildren == true else { return old != new }
        switch (old, new) {
        case let (.object(a)?, .object(b)?):
            // A copy not edited since (as `==` would find at once).
            if a.sharesStorage(with: b) { return false }
            var shared = 0
            for (key, value) in a {
                if let other = b[key] {
                    shared += 1
                    if other != value { differing.append((key, value, other)) }
                } else {
                    differing.append((key, value, .none))
                }
            }
            if shared < b.count {
                for (key, value) in b where a[key] == nil { differing.append((key, .none, value)) }
            }
        case let (.array(a)?, .array(b)?):
            if a.sharesStorage(with: b) { return false }
            for index in 0..<max(a.count, b.count) {
                let before: JSONValue? = index < a.count ? .some(a[index]) : .none
                let after: JSONValue? = index < b.count ? .some(b[index]) : .none
                if before != after { differing.append((String(index), before, after)) }
            }
        default:
            // Different kinds, or one side absent or a scalar: every child of either side is a
            // child of one side only, except for a token both resolve (an object member "0" and
            // an array's first element).
            guard old != new else { return false }
            for (token, value) in children(of: old) { differing.append((token, value, child(of: new, token))) }
            for (token, value) in children(of: new) where child(of: old, token) == nil {
                differing.append((token, .none, value))
            }
            differing.removeAll { $0.old == $0.new }
            return true
        }
        return !differing.isEmpty
    }

    /// Lists what differs under `node` (already marked changed): `differing`, its children that
    /// differ, and theirs, within the budget.
    private mutating func follow(_ node: PointerTree.Node, _ differing: [Child]) {
        guard !differing.isEmpty else { return }
        guard differing.count <= budget else {
            markUnfollowed(node)
            return
        }
        budget -= differing.count
        for entry in differing {
            var below: [Child] = []
            _ = Self.compare(entry.old, entry.new, differing: &below)
            follow(mark(child(of: node, entry.token)), below)
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

extension JSONValue {
    /// An object or array with at least one member.
    fileprivate var hasChildren: Bool {
        switch self {
        case .object(let members): !members.isEmpty
        case .array(let elements): !elements.isEmpty
        default: false
        }
    }
}
