import ReelCore
import ReelJSON
import ReelStorage

/// A page of the seqs that changed a path.
public struct ChangedSeqs: Sendable, Equatable {
    public var seqs: [UInt64]
    /// The seq to start the next page at (its `from` oldest first, its `to` newest first); `nil`
    /// when the range is done.
    public var next: UInt64?
}

extension Timeline {
    /// How far the change index answers for this timeline's reducer: 0 when there is none, it is
    /// damaged, or it was built by another reducer version.
    public func indexedThrough() -> UInt64 {
        // (Nothing lies before a bundle's origin to index: the index starts there.)
        let origin = directory.metadata.origin
        guard let status = try? directory.changeIndexStatus(), status.reducer == definition.identity else { return origin }
        return max(status.indexedThrough, origin)
    }

    /// The seqs in `from…through` whose action changed the value at `path` (absent counting as a
    /// value), at most `limit` of them, oldest or newest first.
    ///
    /// Answered from the change index where it goes: its definite entries as they are, the
    /// entries where a change was left unfollowed above `path` checked by rebuilding the state
    /// around them. Past the index (the last few milliseconds of commits, or a log whose index is
    /// still being built), and wherever it is damaged, by replaying and comparing.
    @_specialize(where State == JSONValue)
    public func changedSeqs(
        path: JSONPointer, from: UInt64 = 1, through: UInt64? = nil, newestFirst: Bool = false, limit: Int = 100
    ) throws(StoreError) -> ChangedSeqs {
        guard limit > 0 else { throw StoreError(.invalidArgument, "limit must be at least 1") }
        let latest = try latestSeq()
        let first = max(from, directory.metadata.origin + 1)
        let last = min(through ?? latest, latest)
        guard first <= last else { return ChangedSeqs(seqs: [], next: nil) }
        let indexed = min(indexedThrough(), last)
        var found: [UInt64] = []
        let want = limit + 1  // one more than the page: the next page's start
        if newestFirst {
            if last > indexed {
                found = try replayedChanges(of: path, from: max(first, indexed + 1), through: last, newestFirst: true, want: want)
            }
            if found.count < want, first <= indexed {
                found += try indexedChanges(of: path, from: first, through: indexed, newestFirst: true, want: want - found.count)
            }
        } else {
            if first <= indexed {
                found = try indexedChanges(of: path, from: first, through: indexed, newestFirst: false, want: want)
            }
            if found.count < want, last > indexed {
                found += try replayedChanges(of: path, from: max(first, indexed + 1), through: last, want: want - found.count)
            }
        }
        return ChangedSeqs(seqs: Array(found.prefix(limit)), next: found.count > limit ? found[limit] : nil)
    }

    /// From the index: the first `want` seqs (in the order asked) that changed `path`.
    private func indexedChanges(of path: JSONPointer, from: UInt64, through: UInt64, newestFirst: Bool, want: Int) throws(StoreError) -> [UInt64] {
        let pointer = path.description
        do {
            var definite: [UInt64] = []
            try directory.forEachIndexedChange(.changed, pointer: pointer, from: from, through: through, newestFirst: newestFirst) { seq in
                definite.append(seq)
                return definite.count < want
            }
            // Past the `want`th definite change nothing is needed; before it, every change left
            // unfollowed above `path` may be one of `path`'s.
            let bound = definite.count == want ? definite.last! : (newestFirst ? from : through)
            let (low, high) = newestFirst ? (bound, through) : (from, bound)
            let candidates = try unfollowedAbove(path, from: low, through: high).subtracting(definite)
            let confirmed = try changesByReplay(of: [path], at: candidates.sorted()).compactMap { $0.value[0] ? $0.seq : nil }
            let merged = (definite + confirmed).sorted(by: newestFirst ? (>) : (<))
            return Array(merged.prefix(want))
        } catch let error as StoreError {
            throw error
        } catch let error as StorageError where error.code == .corrupt {
            // Never answered from a damaged index: the log itself.
            let all = try replayedChanges(of: path, from: from, through: through)
            return Array((newestFirst ? all.reversed() : all).prefix(want))
        } catch {
            throw StoreError.walking(error, "read the change index")
        }
    }

    /// The seqs in `from…through` at which a proper ancestor of `path` changed in ways the index
    /// did not follow.
    func unfollowedAbove(_ path: JSONPointer, from: UInt64, through: UInt64) throws -> Set<UInt64> {
        var seqs = Set<UInt64>()
        var ancestor = ""
        for token in path.tokens {
            try directory.forEachIndexedChange(.unfollowed, pointer: ancestor, from: from, through: through) { seq in
                seqs.insert(seq)
                return true
            }
            ancestor = JSONChangeRecorder.appending(token, to: ancestor)
        }
        return seqs
    }

    /// Whether each of `paths` changed at each of `seqs` (ascending), by rebuilding the states.
    @_specialize(where State == JSONValue)
    func changesByReplay(of paths: [JSONPointer], at seqs: [UInt64]) throws(StoreError) -> [(seq: UInt64, value: [Bool])] {
        var walk = ChangeWalk(timeline: self)
        var answers: [(seq: UInt64, value: [Bool])] = []
        for seq in seqs {
            try walk.move(to: seq - 1)
            answers.append((seq, try walk.step(checking: paths)))
        }
        return answers
    }
}

/// A state walked forward one action at a time, telling which of some paths each action changed:
/// the change index's answer where it is definite (``Timeline/foldRecordingChanges(_:into:)``),
/// the values before and after where a change was left unfollowed above a path.
struct ChangeWalk<State: StoreState> {
    let timeline: Timeline<State>
    private(set) var state: State?
    /// The seq `state` is at.
    private(set) var seq: UInt64 = 0
    /// One for the walk, started again for each action (``JSONChangeRecorder/startEdit()``): the
    /// pointers it interns stay, and a new one per action was a third of a long walk's time.
    private var recorder = JSONChangeRecorder()

    init(timeline: Timeline<State>) {
        self.timeline = timeline
    }

    /// Puts the walk at `target`: folding forward when it is a little ahead, else rebuilding.
    @_specialize(where State == JSONValue)
    mutating func move(to target: UInt64) throws(StoreError) {
        if state != nil, target >= seq, target - seq <= 4_096 {
            let fold = timeline.fold
            var current = state!
            state = nil  // `current` the only reference: folded in place
            if target > seq {
                do {
                    try timeline.directory.forEachLoggedAction(from: seq + 1, through: target, preparing: fold.prepares) { envelope, prepared in
                        do {
                            try fold.apply(envelope, prepared: prepared, to: &current) { (to: UInt64) throws(StoreError) -> State in try timeline.state(at: to) }
                        } catch let error as StoreError where error.code == .rejected || error.code == .unknownActionType {
                        }
                        return true
                    }
                } catch {
                    throw StoreError.walking(error, "replay")
                }
            }
            state = current
        } else {
            state = try timeline.state(at: target)
        }
        seq = target
    }

    /// Folds the next action; whether it changed each of `paths`.
    @_specialize(where State == JSONValue)
    mutating func step(checking paths: [JSONPointer]) throws(StoreError) -> [Bool] {
        if state == nil { try move(to: seq) }
        let next = seq + 1
        let found: ActionEnvelope?
        do { found = try timeline.directory.envelope(at: next) } catch { throw StoreError(error) }
        guard let envelope = found else { throw StoreError(.seqOutOfRange, "seq \(next) is beyond the latest seq") }
        var current = state!
        state = nil
        let answers = try Self.fold(
            envelope, prepared: nil, into: &current, checking: paths, recorder: &recorder, timeline: timeline, with: timeline.fold
        )
        state = current
        seq = next
        return answers
    }

    /// Folds the actions after the walk's seq through `last`, one walk of the log (not a read of
    /// each action apart: a replay past the change index ran at a fifth of a replay's speed), and
    /// tells `body` each one's seq and whether it changed each of `paths`, until `body` says
    /// `false`. The walk ends at the last action folded.
    @_specialize(where State == JSONValue)
    mutating func steps(through last: UInt64, checking paths: [JSONPointer], _ body: (UInt64, [Bool]) -> Bool) throws(StoreError) {
        guard last > seq else { return }
        if state == nil { try move(to: seq) }
        var current = state!
        state = nil  // `current` the only reference: folded in place
        var folded = seq
        var stopped = false
        defer {
            // Where the walk stopped, a failure included: the state is that of `folded`.
            state = current
            seq = folded
        }
        let timeline = self.timeline
        let fold = timeline.fold  // made once for the walk
        var recorder = self.recorder
        defer { self.recorder = recorder }
        do {
            try timeline.directory.forEachLoggedAction(from: folded + 1, through: last, preparing: fold.prepares) { envelope, prepared in
                let answers = try Self.fold(
                    envelope, prepared: prepared, into: &current, checking: paths, recorder: &recorder, timeline: timeline, with: fold
                )
                folded = envelope.seq
                stopped = !body(folded, answers)
                return !stopped
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.walking(error, "replay")
        }
        guard stopped || folded == last else {
            throw StoreError(.seqOutOfRange, "seq \(folded + 1) is beyond the latest seq")
        }
    }

    /// Folds `envelope` into `current`: whether it changed each of `paths`.
    private static func fold(
        _ envelope: ActionEnvelope, prepared: PreparedStockAction?, into current: inout State, checking paths: [JSONPointer],
        recorder: inout JSONChangeRecorder, timeline: Timeline<State>, with fold: borrowing Fold<State>
    ) throws(StoreError) -> [Bool] {
        // The values before, only of paths under an ancestor whose change may go unfollowed:
        // kept only as long as the step, and only the subtrees at those paths.
        let beforeJSON: JSONValue? = paths.contains { !$0.isRoot } ? .some(try current.jsonValueOrThrow(seq: envelope.seq - 1)) : .none
        let before: [JSONValue?] = paths.map { path in path.isRoot ? .none : beforeJSON.flatMap { $0.value(at: path) } }
        _ = consume beforeJSON
        recorder.startEdit()
        var json: JSONValue?
        try timeline.foldRecordingChanges(envelope, prepared: prepared, into: &current, recorder: &recorder, json: &json, with: fold)
        let afterJSON: JSONValue? = recorder.unfollowedNodes.isEmpty ? .none : .some(try current.jsonValueOrThrow(seq: envelope.seq))
        // A loop, not a `map` whose closure would take a copy of the recorder (its tables) per action.
        var answers: [Bool] = []
        answers.reserveCapacity(paths.count)
        for index in paths.indices {
            answers.append(recorder.changed(paths[index]) ?? (before[index] != afterJSON.flatMap { $0.value(at: paths[index]) }))
        }
        return answers
    }
}
