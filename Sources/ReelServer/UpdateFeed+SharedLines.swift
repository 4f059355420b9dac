import NIOCore
import ReelJSON
import ReelProtocol

/// The lines of the shared feeds (`subscribe` with `shared`): whole `update` lines, the same
/// buffer for every subscriber of a feed.
extension UpdateFeed {
    /// The shared `actions` feed's lines after `delivered`: the kept pages' lines whole, up to
    /// about `limit` actions (at least one page), or a line of its own for the rest of a page
    /// the subscriber is part-way through (it started or caught up there).
    func actionLines(after delivered: UInt64, limit: Int) -> NextActions {
        state.withLock { state in
            if let answer = state.notFromPages(after: delivered) { return answer }
            var lines: [ByteBuffer] = []
            var next = delivered + 1
            var index = state.pageIndex(holding: next)
            while index < state.pages.count, next - delivered <= UInt64(limit) {
                let page = state.pages[index]
                if next == page.firstSeq {
                    lines.append(page.line)
                } else {
                    let objects = page.slice(from: next, through: page.lastSeq)
                    let tail = UpdateLine.actionsTail(seq: page.lastSeq, feed: Self.actionsFeed)
                    var line = ByteBuffer(bytes: UpdateLine.actionsHead)
                    line.writeImmutableBuffer(objects)
                    line.writeBytes(tail)
                    lines.append(line)
                }
                next = page.lastSeq + 1
                index += 1
            }
            return .actions(lines, last: next - 1)
        }
    }

    /// The shared feed's `value` line for `path` as of `seq`, made once and shared; `nil` when
    /// the feed has moved past `seq` meanwhile (another event loop prepared a newer commit).
    func sharedValueLine(at path: JSONPointer, seq: UInt64, feed: String) -> ByteBuffer? {
        state.withLock { state in
            guard let entry = state.paths[path]?.value, entry.seq == seq else { return nil }
            if let line = entry.valueLine { return line }
            var line = ByteBuffer(bytes: UpdateLine.valueHead(seq: entry.seq, feed: feed))
            line.writeImmutableBuffer(entry.encoded)
            line.writeBytes(UpdateLine.valueTail)
            state.paths[path]!.value!.valueLine = line
            return line
        }
    }

    /// The shared feed's `patch` line for `path` as of `seq`: the patch from the previous value
    /// to the one first seen at `changedAt`, made once and shared; `nil` when the feed has moved
    /// past `seq` meanwhile.
    func sharedPatchLine(at path: JSONPointer, seq: UInt64, changedAt: UInt64, feed: String) -> ByteBuffer? {
        guard let patch = sharedPatch(at: path, changedAt: changedAt) else { return nil }
        return state.withLock { state in
            guard let entry = state.paths[path]?.value, entry.seq == seq, entry.changedAt == changedAt else { return nil }
            if let line = entry.patchLine { return line }
            var line = ByteBuffer(bytes: UpdateLine.patchHead(feed: feed))
            line.writeImmutableBuffer(patch)
            line.writeBytes(UpdateLine.patchTail(seq: entry.seq))
            state.paths[path]!.value!.patchLine = line
            return line
        }
    }
}
