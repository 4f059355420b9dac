import ReelProtocol
import Synchronization

/// Where a subscription's updates go: the stream its ``ReelSubscription`` reads, and the seq of
/// the newest update handed to it, which the subscription reports as its resume point even after
/// it has ended (the state machine forgets ended subscriptions).
final class SubscriptionSink: Sendable {
    typealias UpdateStream = AsyncThrowingStream<SubscriptionUpdate, any Error>

    let updates: UpdateStream
    private let continuation: UpdateStream.Continuation
    private let newestSeq = Atomic<UInt64>(0)

    /// - Parameter mode: Value-mode sinks keep only the newest unread update (each carries the
    ///   whole value); the other modes keep every one, since each depends on the one before.
    init(mode: SubscriptionMode) {
        let buffering: UpdateStream.Continuation.BufferingPolicy = mode == .value ? .bufferingNewest(1) : .unbounded
        (updates, continuation) = UpdateStream.makeStream(bufferingPolicy: buffering)
    }

    /// The seq of the newest update handed over, or 0 before the first.
    var newestDeliveredSeq: UInt64 { newestSeq.load(ordering: .acquiring) }

    func deliver(_ update: SubscriptionUpdate) {
        newestSeq.store(update.seq, ordering: .releasing)
        continuation.yield(update)
    }

    func finish(_ error: ReelClientError?) {
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
    }

    /// Calls `action` when the task reading the updates is cancelled.
    func onReaderCancelled(_ action: @escaping @Sendable () -> Void) {
        continuation.onTermination = { termination in
            if case .cancelled = termination { action() }
        }
    }
}
