import Synchronization
import ReelCore
import ReelJSON
import ReelProtocol

/// Where a `reel` command reads from and writes to: a running daemon (``LiveSource``, over its
/// socket) or a data directory opened read-only (``OfflineSource``). Commands are written once
/// against this protocol, so each works the same way live and offline.
protocol StoreSource: Sendable {
    /// What the source is, for messages: "the daemon at …", "the data directory … (read-only)".
    var label: String { get }
    /// How many actions to ask for per page of history: a live page is one response line, and
    /// must stay under the client's line limit even when every action is as large as a request
    /// may be.
    var historyPageSize: Int { get }
    /// The reducer the source folds actions with.
    func reducer() async throws(ToolError) -> ReducerIdentity

    func latestSeq() async throws(ToolError) -> UInt64
    /// The value at `path` at `seq` (now when `nil`), with the seq it was read at.
    func value(at seq: UInt64?, path: JSONPointer) async throws(ToolError) -> (seq: UInt64, value: JSONValue)
    func history(from: UInt64, to: UInt64?, limit: Int, types: Set<String>?) async throws(ToolError) -> (actions: [ActionEnvelope], next: UInt64?)
    func diff(from: UInt64, to: UInt64, path: JSONPointer) async throws(ToolError) -> JSONPatch
    func replay(to: UInt64?, skip: Set<UInt64>, path: JSONPointer) async throws(ToolError) -> (value: JSONValue, refused: [SeqReason])
    func checkpoints() async throws(ToolError) -> [CheckpointInfo]
    /// Verifies one segment: `from` is 0 or a checkpoint verified before.
    func verify(from: UInt64, through: UInt64) async throws(ToolError) -> VerifyOutcome
    /// Checks every stored record's checksum and reports every damaged one.
    func scan() async throws(ToolError) -> ScanOutcome
    /// The first seq at which `condition` holds, up to `through` (the latest when `nil`), in
    /// O(log n) state computations.
    func bisect(
        _ condition: JSONCondition, through: UInt64?, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(ToolError) -> BisectAnswer
    func stats() async throws(ToolError) -> StatsResult
    func backup(to path: String) async throws(ToolError) -> BackupOutcome

    /// Dispatches actions (one, or an atomic batch); only a daemon can.
    func dispatch(_ actions: [Action], expectedSeq: UInt64?, idempotencyKey: String?) async throws(ToolError) -> (seqs: ClosedRange<UInt64>, duplicate: Bool)
    /// Follows changes at `path` until the task is cancelled.
    func watch(path: JSONPointer, since: UInt64?, mode: SubscriptionMode) async throws(ToolError) -> WatchFeed
    /// Releases the connection or the environment.
    func close() async
}

/// The sources a command run opened, closed when it ends (an in-process run, as in tests or a
/// benchmark, must not leak connections).
final class OpenedSources: Sendable {
    private let sources = Mutex<[any StoreSource]>([])

    func add(_ source: any StoreSource) {
        sources.withLock { $0.append(source) }
    }

    func closeAll() async {
        for source in sources.withLock({ list in defer { list = [] }; return list }) {
            await source.close()
        }
    }
}

/// The answer of `bisect`.
struct BisectAnswer: Sendable {
    /// The first seq at which the condition holds; `nil` when it does not hold at the latest seq.
    var seq: UInt64?
    /// The last seq searched.
    var latest: UInt64
    /// States the condition was evaluated on.
    var probes: Int
}

/// A change seen by `watch`.
struct WatchUpdate: Sendable {
    enum Change: Sendable {
        case value(JSONValue)
        case patch(JSONPatch)
        case actions([ActionEnvelope])
    }

    var seq: UInt64
    var change: Change
}

/// The start of a watch (the seq and, in value and patch modes, the value there) and what follows.
struct WatchFeed: Sendable {
    var seq: UInt64
    var value: JSONValue?
    var updates: AsyncThrowingStream<WatchUpdate, any Error>
}
