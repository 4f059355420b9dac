import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol

/// A running daemon, reached over its socket with ``ReelClient``: every call is the daemon's.
/// Time-travel queries run in the daemon (on its own read transactions, never blocking its
/// writer).
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
            // The connection's own failure reads well after "at PATH:"; the client's message
            // (for apps) names the path itself, which would say it twice.
            var reason = error.message
            if error.code == .connectionFailed, let underlying = error.underlying {
                reason = SocketErrorText.connecting(to: socketPath, underlying)
            }
            throw ToolError(
                "cannot reach a daemon at \(socketPath): \(reason). Start one (reeld), point at it with --socket or REEL_SOCKET, or work offline with --data-dir",
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

    func call<M: ProtocolMethod>(
        _ method: M.Type, _ params: M.Params, progress: (@Sendable (Int, Int) -> Void)?
    ) async throws(ToolError) -> M.Result {
        try await run { () async throws(ReelClientError) in try await client.call(method, params) }
    }

    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode, branch: String?) async throws(ToolError) -> WatchFeed {
        let subscription = try await run { () async throws(ReelClientError) in try await client.subscribe(path, mode: mode, since: since, branch: branch) }
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
