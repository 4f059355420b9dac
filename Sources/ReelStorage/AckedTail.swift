import ReelCore

/// The acknowledged actions that are durable in the journal but not yet in LMDB, which every read
/// of the log serves from memory, so that readers see each action as soon as it is acknowledged.
///
/// Readers take a snapshot *before* they begin their LMDB read transaction. The applier trims the
/// tail only after its LMDB commit, so a snapshot's `applied` is at most what the transaction then
/// sees, and the two together cover every seq up to the snapshot's last without a gap.
struct AckedTail: Sendable {
    /// One group commit's actions.
    final class Group: Sendable {
        let envelopes: [ActionEnvelope]
        /// Kept beside the actions: every append reads the previous group's last seq, and reading
        /// it from its actions touched memory long cold by then (1% of a lone dispatch's time).
        let firstSeq: UInt64
        let lastSeq: UInt64

        init(envelopes: [ActionEnvelope]) {
            self.envelopes = envelopes
            firstSeq = envelopes[0].seq
            lastSeq = envelopes[envelopes.count - 1].seq
        }
    }

    /// LMDB holds every seq up to this one (at least).
    private(set) var applied: UInt64
    /// Seqs `applied + 1` through ``lastSeq``, in order.
    private(set) var groups: [Group] = []

    init(applied: UInt64, groups: [Group] = []) {
        self.applied = applied
        self.groups = groups
    }

    var lastSeq: UInt64 { groups.last?.lastSeq ?? applied }

    mutating func append(_ group: Group) {
        if groups.isEmpty { applied = max(applied, group.firstSeq - 1) }
        precondition(group.firstSeq == lastSeq + 1, "the acknowledged tail must continue without a gap")
        groups.append(group)
    }

    /// Forgets what LMDB now holds. Returns the groups forgotten, for the caller to release
    /// outside its lock: freeing thousands of actions takes milliseconds, which the writer thread,
    /// appending to the tail meanwhile, would otherwise wait.
    mutating func trim(through seq: UInt64) -> [Group] {
        guard seq > applied else { return [] }
        applied = seq
        let kept = groups.firstIndex { $0.lastSeq > seq } ?? groups.endIndex
        let forgotten = Array(groups[..<kept])
        groups.removeFirst(kept)
        return forgotten
    }

    func envelope(at seq: UInt64) -> ActionEnvelope? {
        guard seq > applied, seq <= lastSeq, let index = groupIndex(containing: seq) else { return nil }
        let group = groups[index]
        return group.envelopes[Int(seq - group.firstSeq)]
    }

    /// Calls `body` with each action from `first` through `last` that the tail holds, in order,
    /// until it returns `false`. Returns `false` when `body` did.
    func forEach(from first: UInt64, through last: UInt64, _ body: (consuming ActionEnvelope) throws -> Bool) rethrows -> Bool {
        let from = max(first, applied + 1)
        guard from <= min(last, lastSeq), var index = groupIndex(containing: from) else { return true }
        var seq = from
        while index < groups.count, seq <= last {
            let group = groups[index]
            for envelope in group.envelopes[Int(seq - group.firstSeq)...] {
                guard envelope.seq <= last else { return true }
                guard try body(envelope) else { return false }
            }
            seq = group.lastSeq + 1
            index += 1
        }
        return true
    }

    private func groupIndex(containing seq: UInt64) -> Int? {
        var low = 0
        var high = groups.count
        while low < high {
            let middle = (low + high) / 2
            if groups[middle].lastSeq < seq { low = middle + 1 } else { high = middle }
        }
        return low < groups.count && groups[low].firstSeq <= seq ? low : nil
    }
}
