import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol

/// A running daemon, reached over its socket with ``ReelClient``. Time-travel queries run in the
/// daemon (on its own read transactions, never blocking its writer); `verify` and `backup` use
/// the maintenance methods the daemon adds to protocol 1.
struct LiveSource: StoreSource {
    let client: ReelClient
    let label: String
    /// 256 actions of at most a request line each (1 MiB by default) fit the 256 MiB line limit
    /// set below, so no page of history can be a line the client refuses (and would ask for again).
    var historyPageSize: Int { 256 }

    /// Connects; a daemon that restarts during a long command (`watch`, `log --follow`) is
    /// reconnected to, and the command resumes where it was.
    static func connect(socketPath: String, programName: String) async throws(ToolError) -> LiveSource {
        let configuration = ReelClientConfiguration(
            clientName: programName, maxLineLength: 256 << 20, reconnect: ReconnectPolicy(giveUpAfter: .seconds(30))
        )
        do {
            let client = try await ReelClient.connect(socketPath: socketPath, configuration: configuration)
            return LiveSource(client: client, label: "the daemon at \(socketPath)")
        } catch {
            throw ToolError(
                "cannot reach a daemon at \(socketPath): \(error.message). Start one (reeld), point at it with --socket or REEL_SOCKET, or work offline with --data-dir",
                exitStatus: ExitStatus.unavailable
            )
        }
    }

    private func run<T>(_ body: () async throws(ReelClientError) -> T) async throws(ToolError) -> T {
        do {
            return try await body()
        } catch {
            if let server = error.serverError { throw ToolError(server) }
            throw ToolError("\(label): \(error.message)", exitStatus: ExitStatus.unavailable)
        }
    }

    func reducer() async throws(ToolError) -> ReducerIdentity { client.serverHello.reducer }

    func latestSeq() async throws(ToolError) -> UInt64 {
        try await run { () async throws(ReelClientError) in try await client.hello().seq }
    }

    func value(at seq: UInt64?, path: JSONPointer) async throws(ToolError) -> (seq: UInt64, value: JSONValue) {
        try await run { () async throws(ReelClientError) in
            let snapshot = try await client.get(path, at: seq)
            return (snapshot.seq, snapshot.value)
        }
    }

    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) async throws(ToolError) -> (actions: [ActionEnvelope], next: UInt64?) {
        try await run { () async throws(ReelClientError) in
            let page = try await client.history(from: from, to: to, limit: limit, types: types)
            return (page.actions, page.next)
        }
    }

    func diff(from: UInt64, to: UInt64, path: JSONPointer) async throws(ToolError) -> JSONPatch {
        try await run { () async throws(ReelClientError) in try await client.diff(from: from, to: to, path: path) }
    }

    func replay(to: UInt64?, skip: Set<UInt64>, path: JSONPointer) async throws(ToolError) -> (value: JSONValue, refused: [SeqReason]) {
        try await run { () async throws(ReelClientError) in
            let result = try await client.replay(to: to, skip: skip, path: path)
            return (result.value, result.refused)
        }
    }

    func checkpoints() async throws(ToolError) -> [CheckpointInfo] {
        try await run { () async throws(ReelClientError) in try await client.checkpoints().checkpoints }
    }

    func verify(from: UInt64, through: UInt64) async throws(ToolError) -> VerifyOutcome {
        try await run { () async throws(ReelClientError) in try await client.verify(from: from, through: through) }
    }

    func scan() async throws(ToolError) -> ScanOutcome {
        try await run { () async throws(ReelClientError) in try await client.scan() }
    }

    /// The daemon's `bisect`: it searches with its checkpoints, in one request.
    func bisect(
        _ condition: JSONCondition, through: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(ToolError) -> BisectAnswer {
        progress(0, 1)
        let outcome = try await run { () async throws(ReelClientError) in try await client.bisect(condition, through: through) }
        progress(outcome.probes, outcome.probes)
        return BisectAnswer(seq: outcome.seq, latest: outcome.through, probes: outcome.probes)
    }

    func stats() async throws(ToolError) -> StatsResult {
        try await run { () async throws(ReelClientError) in try await client.stats() }
    }

    func backup(to path: String) async throws(ToolError) -> BackupOutcome {
        try await run { () async throws(ReelClientError) in try await client.backup(to: path) }
    }

    func dispatch(_ actions: [Action], expectedSeq: UInt64?, idempotencyKey: String?) async throws(ToolError) -> (seqs: ClosedRange<UInt64>, duplicate: Bool) {
        try await run { () async throws(ReelClientError) in
            if actions.count == 1 {
                let receipt = try await client.dispatch(actions[0], expectedSeq: expectedSeq, idempotencyKey: idempotencyKey)
                return (receipt.seq...receipt.seq, receipt.duplicate)
            }
            let receipt = try await client.dispatch(batch: actions, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey)
            return (receipt.seqs, receipt.duplicate)
        }
    }

    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode) async throws(ToolError) -> WatchFeed {
        let subscription = try await run { () async throws(ReelClientError) in try await client.subscribe(path, mode: mode, since: since) }
        let (updates, continuation) = AsyncThrowingStream<WatchUpdate, any Error>.makeStream()
        let task = Task {
            do {
                for try await update in subscription {
                    let change: WatchUpdate.Change = switch update.change {
                    case .value(let value): .value(value)
                    case .patch(let patch): .patch(patch)
                    case .actions(let actions): .actions(actions)
                    }
                    continuation.yield(WatchUpdate(seq: update.seq, change: change))
                }
                continuation.finish()
            } catch {
                let message = (error as? ReelClientError)?.message ?? "\(error)"
                continuation.finish(throwing: ToolError("\(label): \(message)", exitStatus: ExitStatus.unavailable))
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            subscription.cancel()
        }
        return WatchFeed(seq: subscription.startSeq, value: subscription.startValue, updates: updates)
    }

    func close() async {
        await client.close()
    }
}
