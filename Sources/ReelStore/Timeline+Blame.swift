import ReelCore
import ReelJSON
import ReelStorage

/// The last change of one leaf: what `blame` answers per leaf.
public struct BlameEntry: Sendable, Equatable {
    /// The leaf's pointer: a scalar, or an empty object or array.
    public var path: JSONPointer
    /// The action that last changed it at or before the seq asked about; `nil` when no action
    /// did (it is as the initial state has it).
    public var action: ActionEnvelope?
}

/// A page of `blame`.
public struct BlameResult: Sendable, Equatable {
    /// The seq whose state was blamed.
    public var seq: UInt64
    /// One entry per leaf, in document order (members by name, elements by index).
    public var entries: [BlameEntry]
    /// The path of the last entry, to pass as `after` for the next page; `nil` on the last page.
    public var next: JSONPointer?
}

extension Timeline {
    /// For each leaf at or under `path` in the state at `at` (a scalar, or an empty object or
    /// array), the action that last changed it.
    ///
    /// A leaf's last change is the newest entry of its list in the change index, unless a change
    /// left unfollowed above it is newer, which is checked by rebuilding the states around it; the
    /// actions past the index are replayed.
    ///
    /// - Parameters:
    ///   - at: the seq whose state is blamed; `nil` for the latest.
    ///   - limit: the most leaves per page.
    ///   - after: the page starts after this leaf (the `next` of the page before).
    ///   - known: the state at some seq already in memory (a running store's published state),
    ///     used instead of rebuilding it when `at` is that seq, or `nil` and it is the latest.
    /// - Throws: ``StoreError`` `.pathNotFound` when nothing is at `path` at that seq,
    ///   `.seqOutOfRange` beyond the latest seq.
    @_specialize(where State == JSONValue)
    public func blame(
        path: JSONPointer = .root, at: UInt64? = nil, limit: Int = 1_000, after: JSONPointer? = nil, known: (seq: UInt64, state: State)? = nil
    ) throws(StoreError) -> BlameResult {
        guard limit > 0 else { throw StoreError(.invalidArgument, "limit must be at least 1") }
        let seq: UInt64
        let value: JSONValue
        if let known, at == nil || at == known.seq {
            seq = known.seq
            value = try Self.slice(known.state, path: path, seq: seq)
        } else {
            let latest = try latestSeq()
            seq = at ?? latest
            guard seq <= latest else { throw StoreError(.seqOutOfRange, "seq \(seq) is beyond the latest seq \(latest)") }
            value = try self.value(at: seq, path: path)
        }
        var leaves: [JSONPointer] = []
        var passedAfter = after == nil
        Self.forEachLeaf(of: value, at: path) { leaf in
            if !passedAfter {
                if leaf == after { passedAfter = true }
                return true
            }
            leaves.append(leaf)
            return leaves.count <= limit
        }
        let next = leaves.count > limit ? leaves[limit - 1] : nil
        leaves = Array(leaves.prefix(limit))

        let indexed = min(indexedThrough(), seq)
        var last = [UInt64?](repeating: nil, count: leaves.count)
        if seq > indexed {
            try lastReplayedChanges(of: leaves, after: indexed, through: seq, into: &last)
        }
        if indexed > directory.metadata.origin {
            try lastIndexedChanges(of: leaves, through: indexed, into: &last)
        }
        var entries: [BlameEntry] = []
        entries.reserveCapacity(leaves.count)
        var actions: [UInt64: ActionEnvelope] = [:]
        for (index, leaf) in leaves.enumerated() {
            guard let changed = last[index] else {
                entries.append(BlameEntry(path: leaf, action: nil))
                continue
            }
            if actions[changed] == nil {
                let envelope: ActionEnvelope?
                do { envelope = try directory.envelope(at: changed) } catch { throw StoreError(error) }
                guard let envelope else { throw StoreError(.storage, "action \(changed) is missing from the log") }
                actions[changed] = envelope
            }
            entries.append(BlameEntry(path: leaf, action: actions[changed]))
        }
        return BlameResult(seq: seq, entries: entries, next: next)
    }

    /// For each leaf, the newest seq in `after + 1…through` that changed it, by replaying (the
    /// stretch the change index does not reach); `nil` where none did.
    ///
    /// The newest stretch goes first, from the newest checkpoint before `through`: a leaf that
    /// changes often has its answer there (a blame of a leaf changed every 100 actions, 1,000,000
    /// actions past the index: 0.6 s replaying them all, a few milliseconds so), and only the
    /// leaves still without one are looked for in the rest, from its newest part back, the parts
    /// folded on every core (``newestReplayedChanges(of:after:through:)``): a part costs a
    /// checkpoint's load, so they are a few long ones, not every stretch between checkpoints.
    private func lastReplayedChanges(of leaves: [JSONPointer], after: UInt64, through: UInt64, into last: inout [UInt64?]) throws(StoreError) {
        let checkpoints: [UInt64]
        do {
            checkpoints = through - after > 1 ? try directory.checkpointSeqs(from: after + 1, through: through - 1, reducer: definition.identity) : []
        } catch {
            throw StoreError(error)
        }
        // The newest stretch first, in one walk from its checkpoint.
        let newest = checkpoints.last ?? after
        var walk = ChangeWalk(timeline: self)
        try walk.move(to: newest)
        try walk.steps(through: through, checking: leaves) { step, changes in
            for (index, changed) in changes.enumerated() where changed { last[index] = step }
            return true
        }
        // The rest for the leaves it did not settle, from the newest part back, on every core.
        let open = leaves.indices.filter { last[$0] == nil }
        guard newest > after, !open.isEmpty else { return }
        let found = try newestReplayedChanges(of: open.map { leaves[$0] }, after: after, through: newest)
        for (position, index) in open.enumerated() { last[index] = found[position] }
    }

    /// For each leaf whose `last` is still `nil`, the newest seq through `through` that changed
    /// it, from the index: the newest entry of its list, unless a change left unfollowed above it
    /// is newer. Those candidates are checked seq by seq, newest first, each with one replay step
    /// for every leaf it may concern (a large first `set` leaves every leaf under it a candidate).
    private func lastIndexedChanges(of leaves: [JSONPointer], through: UInt64, into last: inout [UInt64?]) throws(StoreError) {
        do {
            var definite = [UInt64](repeating: 0, count: leaves.count)
            var unfollowedLists: [String: [UInt64]] = [:]
            var candidates: [UInt64: [Int]] = [:]
            for (index, leaf) in leaves.enumerated() where last[index] == nil {
                try directory.forEachIndexedChange(.changed, pointer: leaf.description, from: 1, through: through, newestFirst: true) { seq in
                    definite[index] = seq
                    return false
                }
                var ancestor = ""
                for token in leaf.tokens {
                    if unfollowedLists[ancestor] == nil {
                        var seqs: [UInt64] = []
                        try directory.forEachIndexedChange(.unfollowed, pointer: ancestor, from: 1, through: through) { seq in
                            seqs.append(seq)
                            return true
                        }
                        unfollowedLists[ancestor] = seqs
                    }
                    for seq in unfollowedLists[ancestor]! where seq > definite[index] { candidates[seq, default: []].append(index) }
                    ancestor = JSONChangeRecorder.appending(token, to: ancestor)
                }
            }
            var found = [UInt64?](repeating: nil, count: leaves.count)
            for seq in candidates.keys.sorted(by: >) {
                let open = Array(Set(candidates[seq]!)).filter { found[$0] == nil }.sorted()
                guard !open.isEmpty else { continue }
                let changed = try changesByReplay(of: open.map { leaves[$0] }, at: [seq])[0].value
                for (position, index) in open.enumerated() where changed[position] { found[index] = seq }
            }
            for index in leaves.indices where last[index] == nil {
                last[index] = found[index] ?? (definite[index] > 0 ? definite[index] : nil)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as StorageError where error.code == .corrupt {
            for (index, leaf) in leaves.enumerated() where last[index] == nil {
                last[index] = try replayedChanges(of: leaf, from: directory.metadata.origin + 1, through: through).last
            }
        } catch {
            throw StoreError.walking(error, "read the change index")
        }
    }

    /// Calls `body` with each leaf under `value` (which is at `pointer`) in document order, until
    /// it returns `false`; returns whether it went on to the end.
    @discardableResult
    static func forEachLeaf(of value: JSONValue, at pointer: JSONPointer, _ body: (JSONPointer) -> Bool) -> Bool {
        switch value {
        case .object(let members) where !members.isEmpty:
            for key in members.keys.sorted() {
                guard forEachLeaf(of: members[key]!, at: pointer.appending(key), body) else { return false }
            }
            return true
        case .array(let elements) where !elements.isEmpty:
            for (index, element) in elements.enumerated() {
                guard forEachLeaf(of: element, at: pointer.appending(String(index)), body) else { return false }
            }
            return true
        default:
            return body(pointer)
        }
    }
}
