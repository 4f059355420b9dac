import ReelCore
import Synchronization

/// The streams that hear about commits: `reel log --follow`, tests; and the observers told of
/// each commit's actions on the writer thread (the server's update feed).
///
/// Each stream buffers only the newest seq: a watcher that falls behind learns the latest seq when
/// it next looks, never a queue of stale ones, so a stalled watcher costs the writer nothing.
final class CommitWatchers: Sendable {
    private let state = Mutex<(next: Int, continuations: [Int: AsyncStream<UInt64>.Continuation], finished: Bool)>(
        (0, [:], false)
    )
    private let observers = Mutex<[@Sendable ([ActionEnvelope], CommitChanges?) -> Void]>([])

    /// Calls `observer` on the writer thread after each commit that appended actions, with them
    /// and what they changed (when the writer recorded it).
    func observe(_ observer: @escaping @Sendable ([ActionEnvelope], CommitChanges?) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Called by the writer after each commit that appended actions.
    func published(_ envelopes: [ActionEnvelope], changes: CommitChanges?) {
        guard let last = envelopes.last else { return }
        for observer in observers.withLock({ $0 }) { observer(envelopes, changes) }
        publish(last.seq)
    }

    /// A new stream that first yields `current`, then every later committed seq (coalesced).
    func makeStream(current: UInt64) -> AsyncStream<UInt64> {
        let (stream, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(current)
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            let id = state.next
            state.next += 1
            state.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Called by the writer after each commit that appended actions.
    func publish(_ seq: UInt64) {
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations {
            continuation.yield(seq)
        }
    }

    /// Ends every stream; later streams end at once. Called when the store closes.
    func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations {
            continuation.finish()
        }
    }
}
