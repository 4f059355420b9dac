import ReelCore
import ReelJSON
import ReelProtocol
import ReelQuery
import ReelStorage
import ReelStore

/// A data directory opened read-only, inspected in this process with the app's own reducers.
/// Every read is answered by ``TimelineQueries``, as the daemon answers it.
///
/// Read-only LMDB never writes the data file, so this is safe while a daemon appends to the same
/// directory: each call runs on its own read transactions and sees the latest commit at its
/// start. Nothing here changes the log.
struct OfflineSource<State: StoreState>: StoreSource {
    let queries: TimelineQueries<State>
    let label: String
    var timeline: Timeline<State> { queries.timeline }
    var historyPageSize: Int { HistoryParams.maxLimit }

    init(path: String, definition: StoreDefinition<State>) throws(ToolError) {
        let directory = try DataDirectory.openForReading(path, foldedWith: definition)
        queries = TimelineQueries(Timeline(directory: directory, definition: definition))
        label = "the data directory \(path) (read-only)"
    }

    func call<M: ProtocolMethod>(
        _ method: M.Type, _ params: M.Params, progress: (@Sendable (Int, Int) -> Void)?
    ) async throws(ToolError) -> M.Result {
        if method.permission == .dispatch {
            throw ToolError(
                "dispatching needs a running daemon: \(label) is only read. Drop --data-dir to use the daemon's socket",
                exitStatus: ExitStatus.usage
            )
        }
        let queries = progress.map { self.queries.reporting($0) } ?? self.queries
        do {
            return try queries.answer(method, params)
        } catch {
            throw ToolError(error)
        }
    }

    /// The environment closes when the last reference to the directory goes.
    func close() async {}

    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode, branch: String?) async throws(ToolError) -> WatchFeed {
        try await PolledWatch(source: self, path: path, mode: mode, branch: branch).start(since: since)
    }
}

extension DataDirectory {
    /// `path` opened read-only for a program folding with `definition`: refused when it was made
    /// for another reducer, whose actions this program's reducers would refuse one by one.
    static func openForReading<State: StoreState>(_ path: String, foldedWith definition: StoreDefinition<State>) throws(ToolError) -> DataDirectory {
        let directory: DataDirectory
        do {
            directory = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        } catch {
            throw ToolError(error)
        }
        guard directory.metadata.reducerName == definition.identity.name else {
            throw ToolError(
                "\(path) was made for reducer '\(directory.metadata.reducerName)', and this program folds with '\(definition.identity.name)': inspect it with that reducer's program",
                exitStatus: ExitStatus.refused
            )
        }
        return directory
    }
}
