import ReelJSON
import ReelProtocol

extension ReelClient {
    /// Follows the changes at a path.
    ///
    /// ```swift
    /// let todos = try await client.subscribe(try JSONPointer("/todos"), mode: .patch)
    /// var value = todos.startValue ?? .null
    /// for try await update in todos {
    ///     try update.patch?.apply(to: &value)
    /// }
    /// ```
    ///
    /// The subscription is registered when the daemon's answer is read, before the line after it:
    /// no update can arrive for a subscription the client does not know yet. After a reconnection
    /// it resumes from ``ReelSubscription/lastDeliveredSeq`` with `since`, so the sequence has no
    /// gap and no duplicate: in `value`/`patch` mode the first update after a resume brings what
    /// changed meanwhile (relative to the last delivered value), in `actions` mode exactly the
    /// actions after the last delivered seq.
    ///
    /// - Parameters:
    ///   - path: The slice to follow; the whole state by default. A path with nothing at it reads as `null`.
    ///   - mode: What updates carry: the whole value, a patch from the previous value, or every action.
    ///   - since: Start after this seq instead of now: the subscription starts at `since` (its
    ///     ``ReelSubscription/startValue`` is the value then) and first delivers what happened after it.
    ///   - branch: Follow this branch of the history instead of the main one (resumed on it too).
    ///   - shared: Take the updates of the daemon's shared feed of this mode and path (`subscribe`
    ///     with `shared`): the same updates, encoded once for every subscriber of the feed, which
    ///     spares a daemon with many subscribers of the same thing. One per feed on a client: a
    ///     second is refused (-32602); not with `branch`.
    /// - Returns: The subscription: where it starts, then its updates as an `AsyncSequence`.
    /// - Throws: ``ReelClientError``: 1006 for a `since` after the latest seq, 1008 when the
    ///   connection holds the daemon's maximum of subscriptions.
    public func subscribe(
        _ path: JSONPointer = .root, mode: SubscriptionMode = .value, since: UInt64? = nil, branch: String? = nil, shared: Bool = false
    ) async throws(ReelClientError) -> ReelSubscription {
        let (local, sink) = core.openSubscription(path: path, mode: mode, branch: branch, shared: shared)
        let params = SubscribeParams(path: path, since: since, mode: mode, branch: branch, shared: shared)
        do throws(ReelClientError) {
            let result = try await core.send(
                method: Method.Subscribe.name.rawValue, params: params.jsonValue, kind: .subscribe(local), policy: .resendAfterReconnect
            ).get()
            let start = try WireDecoding.subscriptionStart(result, mode: mode)
            return ReelSubscription(path: path, mode: mode, start: start, core: core, localID: local, sink: sink)
        } catch {
            core.cancelSubscription(local)
            throw error
        }
    }
}
