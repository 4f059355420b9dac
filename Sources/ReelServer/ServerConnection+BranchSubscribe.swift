import NIOCore
import ReelJSON
import ReelProtocol
import ReelStore

extension ServerConnection {
    /// How often a branch subscription looks for the branch's new actions without being woken:
    /// the branch writer wakes it after each commit to the branch (a branch's dispatches do not
    /// pass the main writer, whose commits feed the other subscriptions); this finds a branch
    /// deleted meanwhile.
    static var branchRecheckInterval: Duration { .seconds(1) }

    /// `subscribe` with `branch`: the result (the branch's seq and value now, or at `since`), and
    /// the subscription's id when it was made.
    func subscribeToBranch(_ params: SubscribeParams, branch: String, id: RPCID) async -> ([UInt8], (id: String, seq: UInt64, value: JSONValue)?) {
        do throws(RPCError) {
            let latest = try await handler.branchLatestSeq(branch)
            if let since = params.since, since > latest {
                throw RPCError(code: RPCError.Code.seqOutOfRange, message: "since \(since) is beyond the latest seq \(latest) of branch '\(branch)'")
            }
            let seq = params.since ?? latest
            let value: JSONValue = params.mode == .actions ? .null : try await handler.branchState(branch, at: seq).value(at: params.path) ?? .null
            let subscription = subscriptionIDs.make()
            let result = SubscribeResult(subscription: subscription, seq: seq, value: params.mode == .actions ? Optional.none : .some(value))
            return (RPCSuccess(id: id, result: result).encodedLine(), (subscription, seq, value))
        } catch {
            return (RPCResponse(id: id, error: error).encodedLine(), nil)
        }
    }

    /// Follows a branch for one subscription until cancelled (unsubscribed, the connection ended)
    /// or the branch is deleted: each new action in `actions` mode, the new value or the patch to
    /// it in the others, written as `update` lines in turn with the connection's answers.
    func followBranch(
        _ branch: String, params: SubscribeParams, subscription: String, from start: UInt64, value initial: JSONValue, outbox: Outbox
    ) async {
        var delivered = start
        var value = initial
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let writer = handler.store.branchWriter
        let watch = writer.watchCommits(to: branch) { wake.yield() }
        defer { writer.stopWatching(watch) }
        let recheck = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.branchRecheckInterval)
                wake.yield()
            }
        }
        defer { recheck.cancel() }
        wake.yield()  // a first look: actions since `start` may be there already
        // Ends when the task is cancelled (unsubscribed, the connection ended).
        for await _ in wakes {
            do {
                let latest = try await handler.branchLatestSeq(branch)
                if latest > delivered {
                    var lines: [[UInt8]] = []
                    switch params.mode {
                    case .actions:
                        var from = delivered + 1
                        while from <= latest {
                            let page = try await handler.branchHistory(branch, from: from, to: latest, limit: 1_000)
                            guard let last = page.actions.last else { break }
                            lines.append(RPCNotification.update(subscription: subscription, seq: last.seq, actions: page.actions).encodedLine())
                            from = last.seq + 1
                        }
                    case .value, .patch:
                        let now = try await handler.branchState(branch, at: latest).value(at: params.path) ?? .null
                        if now != value {
                            lines.append(params.mode == .value
                                ? RPCNotification.update(subscription: subscription, seq: latest, value: now).encodedLine()
                                : RPCNotification.update(subscription: subscription, seq: latest, patch: JSONPatch(from: value, to: now)).encodedLine())
                            value = now
                        }
                    }
                    for line in lines {
                        guard let slot = await outbox.reserve() else { return }  // the connection is closing
                        outbox.fill(slot, with: line)
                    }
                    delivered = latest
                }
            } catch {
                // The branch was deleted (or the daemon is stopping): nothing more will come.
                return
            }
        }
    }
}
