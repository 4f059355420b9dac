import ReelJSON
import ReelProtocol

/// The state (or a slice) as a Swift type, over time: the value the subscription started with,
/// then the value after each change, each with its seq. Made by ``ReelClient/states(_:path:mode:)``.
///
/// In `patch` mode the stream keeps the current JSON value and applies each patch to it; in
/// `value` mode each update carries the whole value. Either way it rides on a ``ReelSubscription``
/// and so resumes across reconnections without a gap: the first element after a resume is the
/// state with everything missed meanwhile.
public struct StateStream<Value: Decodable & Sendable>: AsyncSequence, Sendable {
    /// Each element is the value at a seq.
    public typealias Element = Snapshot<Value>
    /// The stream ends with a ``ReelClientError`` when its subscription cannot go on or a value
    /// does not decode.
    public typealias Failure = ReelClientError

    /// How the daemon sends the changes.
    public enum Mode: Sendable {
        /// Patches from the previous value: little to send when a large state changes a little.
        case patch
        /// The whole value each time: a slow reader skips straight to the newest.
        case value

        var subscriptionMode: SubscriptionMode {
            switch self {
            case .patch: .patch
            case .value: .value
            }
        }
    }

    /// The subscription the stream reads; ``ReelSubscription/cancel()`` ends the stream.
    public let subscription: ReelSubscription

    /// An iterator over the states. Make one per stream: the updates are delivered once.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            updates: subscription.makeAsyncIterator(), path: subscription.path,
            start: Snapshot(seq: subscription.startSeq, value: subscription.startValue ?? .null)
        )
    }

    /// Reads the states of one stream.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var updates: ReelSubscription.AsyncIterator
        let path: JSONPointer
        /// The latest value as JSON; patches apply to it.
        var current: JSONValue
        /// The starting value, until it has been returned.
        var start: Snapshot<JSONValue>?

        init(updates: ReelSubscription.AsyncIterator, path: JSONPointer, start: Snapshot<JSONValue>) {
            self.updates = updates
            self.path = path
            self.current = start.value
            self.start = start
        }

        /// The starting state first, then the state after each change; `nil` once the stream ended.
        ///
        /// - Throws: ``ReelClientError``: `decodingFailed` for a value that does not fit `Value`,
        ///   or why the subscription ended.
        public mutating func next() async throws(ReelClientError) -> Snapshot<Value>? {
            if let start {
                self.start = nil
                return try decode(start)
            }
            return try advance(with: try await updates.next())
        }

        /// The next state, read on the caller's actor; see ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ReelClientError) -> Snapshot<Value>? {
            if let start {
                self.start = nil
                return try decode(start)
            }
            return try advance(with: try await updates.next(isolation: actor))
        }

        private mutating func advance(with update: SubscriptionUpdate?) throws(ReelClientError) -> Snapshot<Value>? {
            guard let update else { return nil }
            switch update.change {
            case .value(let value):
                current = value
            case .patch(let patch):
                do {
                    try patch.apply(to: &current)
                } catch {
                    throw ReelClientError(
                        .protocolViolation, "the patch of seq \(update.seq) does not apply to the value delivered before: \(error.message)",
                        underlying: error)
                }
            case .actions:
                throw .violation("actions to a state stream")
            }
            return try decode(Snapshot(seq: update.seq, value: current))
        }

        private func decode(_ snapshot: Snapshot<JSONValue>) throws(ReelClientError) -> Snapshot<Value> {
            Snapshot(seq: snapshot.seq, value: try ReelClient.decode(Value.self, from: snapshot.value, path: path, seq: snapshot.seq))
        }
    }
}
