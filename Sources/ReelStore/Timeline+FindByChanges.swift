import ReelCore
import ReelJSON

extension Timeline {
    /// ``find(from:to:limit:progress:where:)`` for a condition on one path: asked only at the seqs
    /// whose action changed that path, which the change index lists, instead of after every
    /// action. Falls back to folding every action where that does not apply (see
    /// ``PathSkeleton``): another reducer than the stock one, a path through array indices.
    @_specialize(where State == JSONValue)
    public func find(
        _ condition: JSONCondition, from: UInt64 = 1, to: UInt64? = nil, limit: Int = 100, progress: ((UInt64) -> Void)? = nil
    ) throws(StoreError) -> FindResult {
        if definition.reducer is JSONDocumentReducer, PathSkeleton.follows(condition.pointer), indexedThrough() > 0 {
            return try findAtChanges(condition, from: from, to: to, limit: limit, progress: progress)
        }
        return try find(from: from, to: to, limit: limit, progress: progress) { condition.holds(in: $0) }
    }

    /// The value at the condition's path is carried from change to change in a ``PathSkeleton``:
    /// the state at `from` is rebuilt once, then each action that changed the path is applied to
    /// the skeleton alone. An action the skeleton cannot take (it reads something the skeleton
    /// lacks) is applied to the whole state before it, rebuilt from the nearest checkpoint.
    private func findAtChanges(
        _ condition: JSONCondition, from: UInt64, to: UInt64?, limit: Int, progress: ((UInt64) -> Void)?
    ) throws(StoreError) -> FindResult {
        let (first, last, latest) = try findWindow(from: from, to: to)
        let path = condition.pointer
        var result = FindResult(ranges: [], next: nil, through: last, actionsReplayed: 0)
        let start = try reconstruct(at: first)
        result.actionsReplayed = start.replayed
        var skeleton = PathSkeleton(path: path, state: try start.state.jsonValueOrThrow(seq: first))
        var open: UInt64? = condition.holds(forValueAtPointer: skeleton.value) ? first : nil
        var cursor = first + 1
        pages: while cursor <= last {
            let page = try changedSeqs(path: path, from: cursor, through: last, limit: 4_096)
            for seq in page.seqs {
                try advance(&skeleton, to: seq, result: &result)
                if let progress, result.actionsReplayed & 0xFFF == 0 { progress(seq) }
                let holds = condition.holds(forValueAtPointer: skeleton.value)
                if holds, open == nil {
                    open = seq
                } else if !holds, let runStart = open {
                    result.ranges.append(SeqRange(from: runStart, to: seq - 1))
                    open = nil
                    if result.ranges.count >= limit, seq < last {
                        result.next = seq + 1
                        result.through = seq
                        break pages
                    }
                }
            }
            guard let next = page.next else { break }
            cursor = next
        }
        if result.next == nil, let runStart = open {
            result.ranges.append(SeqRange(from: runStart, to: last == latest ? nil : last))
        }
        return result
    }

    /// Applies the action at `seq` to `skeleton`, or, when the skeleton cannot take it, rebuilds
    /// the whole state at `seq` and takes the skeleton from it.
    private func advance(_ skeleton: inout PathSkeleton, to seq: UInt64, result: inout FindResult) throws(StoreError) {
        let found: ActionEnvelope?
        do { found = try directory.envelope(at: seq) } catch { throw StoreError(error) }
        guard let envelope = found else { throw StoreError(.seqOutOfRange, "seq \(seq) is beyond the latest seq") }
        result.actionsReplayed += 1
        if skeleton.apply(envelope) { return }
        let rebuilt = try reconstruct(at: seq)
        result.actionsReplayed += rebuilt.replayed
        skeleton = PathSkeleton(path: skeleton.path, state: try rebuilt.state.jsonValueOrThrow(seq: seq))
    }
}
