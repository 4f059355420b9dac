import ReelCore
import ReelJSON
import ReelProtocol

/// One change a subscription delivers.
public struct SubscriptionUpdate: Sendable, Equatable {
    /// What an update carries, by subscription mode.
    public enum Change: Sendable, Equatable {
        /// Mode `value`: the whole value at the path.
        case value(JSONValue)
        /// Mode `patch`: RFC 6902 operations turning the previously delivered value into the new
        /// one, with paths relative to the subscribed path.
        case patch(JSONPatch)
        /// Mode `actions`: the accepted actions after the previous update, in order, none missing.
        case actions([ActionEnvelope])
    }

    /// The seq whose state the update brings (in actions mode, the seq of its last action).
    public var seq: UInt64
    /// The change.
    public var change: Change

    /// - Parameters:
    ///   - seq: The seq the update brings the subscriber to.
    ///   - change: The change.
    public init(seq: UInt64, change: Change) {
        self.seq = seq
        self.change = change
    }

    /// The value, in `value` mode; otherwise `nil`.
    public var value: JSONValue? { if case .value(let value) = change { value } else { nil } }
    /// The patch, in `patch` mode; otherwise `nil`.
    public var patch: JSONPatch? { if case .patch(let patch) = change { patch } else { nil } }
    /// The actions, in `actions` mode; otherwise `nil`.
    public var actions: [ActionEnvelope]? { if case .actions(let actions) = change { actions } else { nil } }
}

/// A live subscription: where it started, then every change as an `AsyncSequence`.
///
/// The subscription survives reconnections: after a drop the client subscribes again with
/// `since` set to the last seq it delivered, so the sequence goes on with no gap and no duplicate
/// (see ``ReelClient``). It ends when it is cancelled, when the client is closed (normally), or
/// with a ``ReelClientError`` when it cannot go on (the client gave up reconnecting, or the daemon
/// refused to resume it, say because its log no longer reaches the last delivered seq).
///
/// Updates are buffered until read. In `value` mode only the newest unread update is kept: each
/// carries the whole value, so an older one is never needed, and a slow reader sees fewer updates
/// with `seq` jumping, exactly as the protocol's coalescing does. In `patch` and `actions` modes
/// every update is kept, because each depends on the one before.
///
/// Iterate it once; cancelling the iterating task, or ``cancel()``, unsubscribes.
public final class ReelSubscription: AsyncSequence, Sendable {
    /// Each element is one update.
    public typealias Element = SubscriptionUpdate
    /// The sequence ends with a ``ReelClientError`` when the subscription cannot go on.
    public typealias Failure = ReelClientError

    /// The subscribed path.
    public let path: JSONPointer
    /// What the updates carry.
    public let mode: SubscriptionMode
    /// The seq the subscription started at: updates bring what happened after it. With `since`,
    /// this is `since`.
    public let startSeq: UInt64
    /// The value at ``path`` at ``startSeq`` (`.null` when nothing is there); `nil` in `actions` mode.
    public let startValue: JSONValue?

    let core: ClientCore
    let localID: Int
    let sink: SubscriptionSink

    init(path: JSONPointer, mode: SubscriptionMode, start: SubscriptionStart, core: ClientCore, localID: Int, sink: SubscriptionSink) {
        self.path = path
        self.mode = mode
        self.startSeq = start.seq
        self.startValue = start.value
        self.core = core
        self.localID = localID
        self.sink = sink
    }

    /// The seq of the newest update handed to this sequence (read or still buffered), or
    /// ``startSeq`` before the first: where the subscription resumes after a reconnection.
    public var lastDeliveredSeq: UInt64 {
        Swift.max(startSeq, sink.newestDeliveredSeq)
    }

    /// Ends the subscription: the sequence finishes after the updates already buffered, and the
    /// daemon is told to stop sending. Calling it again does nothing.
    public func cancel() {
        core.cancelSubscription(localID)
    }

    deinit {
        core.cancelSubscription(localID)
    }

    /// An iterator over the updates. Make one per subscription: the updates are delivered once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self, base: sink.updates.makeAsyncIterator())
    }

    /// Reads the updates of one subscription.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// Held so that the subscription is not cancelled (by its `deinit`) while being iterated,
        /// as in `for try await update in try await client.subscribe(…)`.
        let subscription: ReelSubscription
        var base: AsyncThrowingStream<SubscriptionUpdate, any Error>.AsyncIterator

        /// The next update, or `nil` once the subscription has ended normally.
        ///
        /// - Throws: ``ReelClientError`` when it ended because it could not go on.
        public mutating func next() async throws(ReelClientError) -> SubscriptionUpdate? {
            do {
                return try await base.next()
            } catch {
                throw Self.clientError(error)
            }
        }

        /// The next update, read on the caller's actor; see ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ReelClientError) -> SubscriptionUpdate? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                throw Self.clientError(error)
            }
        }

        /// The stream only ever finishes with a ``ReelClientError``; anything else is a bug here.
        private static func clientError(_ error: any Error) -> ReelClientError {
            (error as? ReelClientError) ?? ReelClientError(.protocolViolation, "the subscription ended: \(error)")
        }
    }
}
