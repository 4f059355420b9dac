import CoreMetrics
import Foundation
import ReelCore
import ReelStorage
import Synchronization
import Tracing

/// How a store runs.
public struct StoreOptions: Sendable {
    /// Write a checkpoint every this many actions (0: only at clean shutdown). Smaller means faster
    /// time travel and restarts, larger means less disk.
    public var checkpointEvery: UInt64 = 10_000
    /// Also write a checkpoint once the actions since the last one take this many bytes in the log
    /// (0: count actions only). Replaying costs about as much as the records weigh, so this keeps
    /// the state at any seq quick to rebuild when actions are large, where a count alone would
    /// let the replay behind each checkpoint grow with the payloads.
    public var checkpointEveryBytes: UInt64 = StoreOptions.defaultCheckpointEveryBytes
    /// 4 MiB: about 10 ms of replay for large payloads on the reference machine (see BENCHMARKS.md).
    public static let defaultCheckpointEveryBytes: UInt64 = 4 << 20
    /// The most actions one group commit takes, to bound the latency of the requests behind it.
    public var maxActionsPerCommit: Int = 10_000
    /// Write a checkpoint when the store closes, so the next open replays nothing. Turning it off
    /// only makes sense to exercise recovery by replay.
    public var checkpointAtShutdown = true
    /// How to open the data directory.
    public var storage = DataDirectory.Options()
    /// How long the idle writer watches for the next dispatch before it sleeps (zero: it sleeps at
    /// once). Saves a wake-up per dispatch for a client that sends one at a time, for at most this
    /// much of one core after each commit.
    public var writerIdleSpin: Duration = .microseconds(100)
    /// Where the store reports its counters and histograms (swift-metrics): the process's
    /// bootstrapped backend unless another is given, such as a daemon's own Prometheus registry.
    public var metrics: any MetricsFactory = MetricsSystem.factory
    /// Called every ``openProgressInterval`` (at most) while opening replays the log, with the seq
    /// reached and the latest seq: a daemon tells its service manager (the store logs it too).
    public var openProgress: (@Sendable (_ replayedThrough: UInt64, _ latest: UInt64) -> Void)?
    public var openProgressInterval: Duration = .seconds(2)
    /// Where the log's order is decided when several daemons serve one store (`reeld
    /// --shared-log`); `nil`: the data directory alone. See ``SharedLog``.
    public var sharedLog: (any SharedLog)?
    /// Keep the change index (which actions changed which paths: `history` by path, `blame`,
    /// `find`) up to date as actions are committed. Off, queries by path replay the log instead;
    /// benchmarks turn it off to measure what it costs.
    public var changeIndex = true
    /// Whether the open may wait for the change index to be brought up to date, which a reducer
    /// that cannot predict its changes (a typed state) does by folding the log before the store
    /// serves. A take-over says no: the index is then left as it is for this run (answers replay
    /// past it, as without one) and brought up to date at the next open that may wait.
    public var changeIndexMayDelayOpen = true
    /// Bringing the change index up to date splits the log into parts, one thread each, each at
    /// least this many actions (a part after the first loads a checkpoint to find its first
    /// state, and replays from it where it does not start right after one: not worth it for a
    /// short part).
    public var changeIndexBuildMinimumPart: UInt64 = 100_000
    /// Starts a `commit` span for every group the writer commits (`reeld --otlp-endpoint`), linked
    /// to the trace context of each dispatch in it (``Store/prepare(batch:peer:expectedSeq:idempotencyKey:meta:traceContext:into:)``);
    /// `nil`: no spans, and no cost.
    public var tracer: (any Tracer)?

    public init(checkpointEvery: UInt64 = 10_000, maxActionsPerCommit: Int = 10_000, storage: DataDirectory.Options = .init()) {
        self.checkpointEvery = checkpointEvery
        self.maxActionsPerCommit = maxActionsPerCommit
        self.storage = storage
    }
}

/// The answer to an accepted dispatch, sent once the actions are durable.
public struct DispatchResult: Sendable, Equatable {
    /// The seqs the actions got: one for a single action, consecutive for a batch.
    public var seqs: ClosedRange<UInt64>
    /// `true` when the idempotency key had been used already: nothing new was applied and `seqs`
    /// are the seqs of the first dispatch.
    public var duplicate: Bool

    public init(seqs: ClosedRange<UInt64>, duplicate: Bool = false) {
        self.seqs = seqs
        self.duplicate = duplicate
    }

    /// The first (for a single action, the only) seq.
    public var seq: UInt64 { seqs.lowerBound }
}

/// The latest committed state and its seq. Everyone who reads the store sees one of these: never
/// a state that is not on disk.
public struct StoreSnapshot<State: Sendable>: Sendable {
    public var seq: UInt64
    public var state: State
}

/// Counters of a running store.
public struct StoreStatistics: Sendable, Equatable {
    /// The latest committed seq.
    public var seq: UInt64 = 0
    /// Transactions committed with at least one action.
    public var commits: UInt64 = 0
    /// Actions committed since the store was opened.
    public var actionsCommitted: UInt64 = 0
    /// The most actions one commit carried.
    public var largestCommit: Int = 0
    /// Dispatches refused (rejected, unknown type, stale `expectedSeq`…).
    public var dispatchesRefused: UInt64 = 0
    /// Dispatches answered from an idempotency key.
    public var duplicates: UInt64 = 0
    /// Commits that failed (nothing of them was acknowledged).
    public var commitFailures: UInt64 = 0
    /// Checkpoints written since the store was opened, and the newest one's seq.
    public var checkpointsWritten: UInt64 = 0
    public var lastCheckpointSeq: UInt64 = 0
    /// How the state was restored when the store opened.
    public var restoredFromCheckpoint: UInt64?
    public var replayedAtOpen: Int = 0
    /// How long opening took (restoring the state: a checkpoint and the replay after it).
    public var openDuration: Duration = .zero
    /// When the newest checkpoint of this reducer was made (written since the store opened, or
    /// the newest found at open).
    public var lastCheckpointTime: Timestamp?
    /// Commit durations since the store opened, in microseconds: from a group's first reducer to
    /// its actions being durable and published.
    public var commitMicros = DistributionSummary()
    /// Durations of the durable append (writing the group's records and syncing them), in
    /// microseconds.
    public var syncMicros = DistributionSummary()
    /// Actions per commit.
    public var actionsPerCommit = DistributionSummary()
    /// Durations of the journal applier's LMDB commits (acknowledged groups moved into LMDB, off
    /// the acknowledgement path), in microseconds.
    public var lmdbCommitMicros = DistributionSummary()
    /// Bytes of acknowledged actions the journal holds that LMDB does not have yet.
    public var journalBacklogBytes = 0
    /// With a shared log: where it is and how far behind it this node is.
    public var sharedLog: SharedLogStatus?
    /// Groups that lost the race to another node's append and were evaluated again.
    public var sharedLogConflicts: UInt64 = 0
    /// Actions taken by other nodes and applied here.
    public var sharedLogFollowed: UInt64 = 0
}

/// How a node of a shared log stands.
public struct SharedLogStatus: Sendable, Equatable {
    /// The log, without secrets.
    public var location: String
    /// The latest seq this node knows the shared log to have.
    public var latestSeq: UInt64 = 0
    /// Whether the last call to the shared log succeeded (`nil` before the first).
    public var reachable: Bool?
    /// The last failure to reach it, while it is unreachable.
    public var lastError: String?
    /// Set when this node's copy disagrees with the log: it refuses dispatches, and says why.
    public var refusal: String?
    /// How long the last append took, in microseconds.
    public var lastAppendMicros: Int?

    public init(location: String) { self.location = location }

    /// How many seqs this node's copy is behind the log, as far as it knows.
    public func lag(localSeq: UInt64) -> UInt64 { latestSeq > localSeq ? latestSeq - localSeq : 0 }
}

extension Peer {
    /// This process: for actions dispatched in-process rather than over a socket. Its ``Peer/exe``
    /// is `nil`: every action of the process would carry the same path, which the process knows.
    public static var currentProcess: Peer {
        Peer(uid: UInt32(getuid()), gid: UInt32(getgid()), pid: Int32(getpid()))
    }
}

/// One dispatch waiting for the writer.
struct DispatchRequest: Sendable {
    var actions: [Action]
    var peer: Peer
    var expectedSeq: UInt64?
    var idempotencyKey: String?
    /// Logged with each of the actions.
    var meta: ActionMeta?
    /// The dispatch's span, which the commit span links to (only when the store has a tracer).
    var traceContext: ServiceContext?
    /// A health probe, not a dispatch: the writer answers it when it reaches it, with an error if
    /// it can no longer commit (see ``Store/probeWriter()``).
    var isProbe = false
    /// Settled with the outcome (a ticket and a flag, rather than a closure capturing them: that
    /// was one allocation per dispatch).
    let ticket: DispatchTicket
    /// Whether the dispatch is in the writer's count of dispatches in flight (``InFlightCount``)
    /// until it is answered; probes are not. A flag, not a reference to the count: every request
    /// retaining (on an event loop) and releasing (on the writer's thread) the one object that
    /// all of them share kept its cache line going back and forth between the cores, 4% of the
    /// event loops' samples at 50 × 16.
    let counted: Bool

    /// `@revert` reads committed history, so a request carrying one starts a group of its own.
    var containsStoreAction: Bool { actions.contains { $0.isReserved } }

    /// Answers the dispatch, taking it out of `inFlight` (the writer's count) first if it is in it.
    func reply(_ outcome: Result<DispatchResult, StoreError>, inFlight: InFlightCount) {
        if counted { inFlight.value.subtract(1, ordering: .relaxed) }
        ticket.resolve(outcome)
    }
}

/// Dispatches submitted and not yet answered: a lone dispatch is committed on its caller's thread
/// only when there is none (``Store/submit(batch:peer:expectedSeq:idempotencyKey:meta:commitIfAlone:)``).
final class InFlightCount: Sendable {
    let value = Atomic<Int>(0)
}
