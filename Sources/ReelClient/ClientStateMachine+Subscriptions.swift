import ReelJSON
import ReelProtocol

// Subscriptions: registering the daemon's id when the `subscribe` answer is read, delivering
// updates with their continuity checked, resuming after a reconnection, and ending.

extension ClientStateMachine {
    /// A new local subscription; its `subscribe` request follows.
    mutating func openSubscription(path: JSONPointer, mode: SubscriptionMode, branch: String? = nil, shared: Bool = false) -> Int {
        makeSubscription(path: path, mode: mode, branch: branch, shared: shared)
    }

    /// The seq a subscription last delivered, or `nil` before its first answer (or once ended).
    func lastDeliveredSeq(of local: Int) -> UInt64? {
        subscriptions[local]?.lastSeq
    }

    /// The answer to an app's `subscribe`. On success the daemon's id is routed to the local
    /// subscription right here — while the answer is being read, before the next line is — since
    /// the daemon may send the subscription's first update right behind its answer.
    mutating func subscribed(
        _ local: Int, answering id: Int64, _ outcome: Result<JSONValue, ReelClientError>, generation: UInt64
    ) -> [Output] {
        guard case .success(let result) = outcome else {
            return refusedSubscription(local) + [.answer(id: id, outcome)]
        }
        let start: SubscriptionStart
        do {
            start = try WireDecoding.subscriptionStart(result, mode: subscriptions[local]?.mode ?? .value)
        } catch {
            return refusedSubscription(local) + [.answer(id: id, .failure(error))]
        }
        guard var subscription = subscriptions[local] else {
            // Ended while its request was in flight (the client is closing): stop the daemon's side.
            return unsubscribe(serverID: start.serverID, generation: generation) + [.answer(id: id, .failure(closedError))]
        }
        subscription.lastSeq = start.seq
        route(local, &subscription, start)
        return [.answer(id: id, outcome)]
    }

    /// The answer to a `subscribe` with `since` sent after a reconnection. The daemon starts the
    /// subscription at `since` (the last delivered seq) and sends what was missed as its first
    /// update, so nothing is delivered here.
    mutating func resubscribed(_ local: Int, _ outcome: Result<JSONValue, ReelClientError>, generation: UInt64) -> [Output] {
        guard var subscription = subscriptions[local] else {
            if case .success(let result) = outcome, case .string(let serverID)? = result["subscription"] {
                return unsubscribe(serverID: serverID, generation: generation)  // cancelled while resuming
            }
            return []
        }
        let start: SubscriptionStart
        switch outcome {
        case .failure(let error):
            let path = subscription.path.isRoot ? "the whole state" : subscription.path.description
            var ended = ReelClientError(
                error.code,
                "the subscription to \(path) could not resume from seq \(subscription.lastSeq ?? 0) after reconnecting: \(error.message)"
            )
            ended.serverError = error.serverError
            return end(local, with: ended, generation: generation)
        case .success(let result):
            do {
                start = try WireDecoding.subscriptionStart(result, mode: subscription.mode)
            } catch {
                return end(local, with: error, generation: generation)
            }
        }
        guard start.seq == subscription.lastSeq else {
            let ended = ReelClientError.violation(
                "a resumed subscription starting at seq \(start.seq) instead of the requested since \(subscription.lastSeq ?? 0)")
            return unsubscribe(serverID: start.serverID, generation: generation) + end(local, with: ended, generation: generation)
        }
        route(local, &subscription, start)
        return []
    }

    /// Routes the daemon's id (and a shared subscription's feed) on this connection to `local`.
    private mutating func route(_ local: Int, _ subscription: inout Subscription, _ start: SubscriptionStart) {
        subscription.serverID = start.serverID
        subscription.feed = start.feed
        setSubscription(local, subscription)
        routes[start.serverID] = local
        if let feed = start.feed { feedRoutes[feed] = local }
    }

    /// The local subscription an update's params name: by its subscription, or by its shared feed.
    private func routed(_ members: JSONObject) -> Int? {
        if case .string(let serverID)? = members["subscription"] { return routes[serverID] }
        if case .string(let feed)? = members["feed"] { return feedRoutes[feed] }
        return nil
    }

    /// An `update` notification read on connection `generation`.
    ///
    /// Updates must move forward: a later seq than the last delivered, and in actions mode exactly
    /// the actions after it, none missing or repeated. An update that breaks this ends its
    /// subscription with ``ReelClientError/Code/protocolViolation`` rather than hand the app a
    /// state it cannot trust. Updates of subscriptions this client no longer holds are ignored (the
    /// daemon may send some between an `unsubscribe` and its answer).
    mutating func receivedUpdate(_ params: JSONValue?, generation: UInt64) -> [Output] {
        guard currentGeneration == generation, case .object(let members)? = params, let local = routed(members),
            var subscription = subscriptions[local], let lastSeq = subscription.lastSeq
        else { return [] }
        let update: SubscriptionUpdate
        do {
            update = try WireDecoding.update(members, mode: subscription.mode)
            try Self.checkContinuity(update, after: lastSeq)
        } catch {
            return end(local, with: error, generation: generation)
        }
        subscription.lastSeq = update.seq
        setSubscription(local, subscription)
        return [.deliver(subscription: local, update)]
    }

    private static func checkContinuity(_ update: SubscriptionUpdate, after lastSeq: UInt64) throws(ReelClientError) {
        guard update.seq > lastSeq else {
            throw .violation("an update at seq \(update.seq) to a subscription already at seq \(lastSeq)")
        }
        guard case .actions(let actions) = update.change else { return }
        let seqs = actions.map(\.seq)
        guard !seqs.isEmpty, seqs == Array((lastSeq + 1)...(lastSeq + UInt64(seqs.count))), seqs.last == update.seq else {
            throw .violation("an actions update with seqs \(seqs) after seq \(lastSeq) (expected \(lastSeq + 1) onwards, up to \(update.seq))")
        }
    }

    /// The app ended a subscription: finish its sequence and tell the daemon.
    mutating func cancelSubscription(_ local: Int) -> [Output] {
        guard let subscription = subscriptions[local] else { return [] }
        setSubscription(local, nil)
        var outputs: [Output] = [.finish(subscription: local, nil)]
        if let feed = subscription.feed { feedRoutes[feed] = nil }
        if let serverID = subscription.serverID, let generation = currentGeneration {
            routes[serverID] = nil
            outputs += unsubscribe(serverID: serverID, generation: generation)
        }
        return outputs
    }

    /// Ends a subscription that cannot go on, with `error`.
    private mutating func end(_ local: Int, with error: ReelClientError, generation: UInt64) -> [Output] {
        guard let subscription = subscriptions[local] else { return [] }
        setSubscription(local, nil)
        var outputs: [Output] = [.finish(subscription: local, error)]
        if let feed = subscription.feed { feedRoutes[feed] = nil }
        if let serverID = subscription.serverID {
            routes[serverID] = nil
            outputs += unsubscribe(serverID: serverID, generation: generation)
        }
        return outputs
    }

    /// A `subscribe` the daemon refused: its subscription never started.
    private mutating func refusedSubscription(_ local: Int) -> [Output] {
        guard subscriptions[local] != nil else { return [] }
        setSubscription(local, nil)
        return [.finish(subscription: local, nil)]
    }
}
