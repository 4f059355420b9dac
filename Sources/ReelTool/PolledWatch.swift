import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// `reel watch` and `reel log --follow` on a data directory (of the main history or a branch):
/// polls the log (or the branch) for new actions and turns them into the same updates a daemon's
/// subscription sends — the changed value, a patch relative to the last value shown, or every new
/// action in order.
///
/// Polling, because the writer is another process: LMDB has no change notification, and a read
/// transaction started after a commit sees it (a daemon's subscriptions follow the main history
/// alone). The interval bounds the delay, not the correctness: no action is skipped in `actions`
/// mode, and value and patch modes coalesce like a daemon's do for a slow reader. A missing path
/// reads as `null`, as in subscriptions.
struct PolledWatch: Sendable {
    let source: any StoreSource
    let path: JSONPointer
    let mode: SubscriptionMode
    /// A branch to follow instead of the main history.
    var branch: String?
    var interval: Duration = .milliseconds(200)

    func start(since: UInt64?) async throws(ToolError) -> WatchFeed {
        let latest = try await latestSeq()
        let start = since ?? latest
        guard start <= latest else {
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(start) is beyond the latest seq \(latest)"))
        }
        // Not a ternary: a `nil` beside a JSONValue would become JSON `null` (ExpressibleByNilLiteral).
        var initial: JSONValue?
        if mode != .actions { initial = try await valueOrNull(at: start) }
        let (updates, continuation) = AsyncThrowingStream<WatchUpdate, any Error>.makeStream()
        let task = Task {
            do {
                try await follow(from: start, value: initial, into: continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return WatchFeed(seq: start, value: initial, updates: updates)
    }

    private func follow(
        from start: UInt64, value initial: JSONValue?, into continuation: AsyncThrowingStream<WatchUpdate, any Error>.Continuation
    ) async throws {
        var delivered = start
        var value = initial ?? .null
        while !Task.isCancelled {
            let latest = try await latestSeq()
            if latest > delivered {
                switch mode {
                case .actions:
                    var from = delivered + 1
                    while from <= latest {
                        let page = try await source.history(from: from, to: latest, limit: 1_000, types: nil, branch: branch)
                        guard let last = page.actions.last else { break }
                        continuation.yield(WatchUpdate(seq: last.seq, change: .actions(page.actions)))
                        from = last.seq + 1
                    }
                case .value, .patch:
                    let now = try await valueOrNull(at: latest)
                    if now != value {
                        let change: WatchUpdate.Change = mode == .value ? .value(now) : .patch(JSONPatch(from: value, to: now))
                        continuation.yield(WatchUpdate(seq: latest, change: change))
                        value = now
                    }
                }
                delivered = latest
            }
            try await Task.sleep(for: interval)
        }
    }

    private func latestSeq() async throws(ToolError) -> UInt64 {
        if let branch { return try await source.latestSeq(ofBranch: branch) }
        return try await source.latestSeq()
    }

    private func valueOrNull(at seq: UInt64) async throws(ToolError) -> JSONValue {
        let state = try await source.value(at: seq, path: .root, branch: branch).value
        return state.value(at: path) ?? .null
    }
}
