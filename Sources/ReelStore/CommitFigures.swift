import CoreMetrics
import Histogram

/// How a distribution of figures looks: its count, percentiles and maximum. Latencies are in
/// microseconds.
public struct DistributionSummary: Sendable, Equatable {
    public var count: UInt64
    public var p50: UInt64
    public var p90: UInt64
    public var p99: UInt64
    public var p999: UInt64
    public var max: UInt64

    public init(count: UInt64 = 0, p50: UInt64 = 0, p90: UInt64 = 0, p99: UInt64 = 0, p999: UInt64 = 0, max: UInt64 = 0) {
        self.count = count
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }

    init(_ histogram: Histogram<UInt64>) {
        guard histogram.totalCount > 0 else {
            self.init()
            return
        }
        self.init(
            count: histogram.totalCount, p50: histogram.valueAtPercentile(50), p90: histogram.valueAtPercentile(90),
            p99: histogram.valueAtPercentile(99), p999: histogram.valueAtPercentile(99.9), max: histogram.max
        )
    }
}

/// The commits' durations and sizes since the store opened, for ``StoreStatistics`` (with
/// percentiles, for `reel stats`). Kept in the writer's shared state and recorded under its lock,
/// once per commit, so they cost nothing per action.
struct CommitFigures: Sendable {
    /// From a group's first reducer to its actions being durable and published.
    var commitMicros = Self.latencies()
    /// Writing the group's records and syncing them: the durability point.
    var syncMicros = Self.latencies()
    var actionsPerCommit = Histogram<UInt64>(highestTrackableValue: 1 << 24, numberOfSignificantValueDigits: .two)
    /// The journal's applier moving acknowledged groups into LMDB: one commit, its two syncs.
    var lmdbCommitMicros = Self.latencies()

    /// 1 µs to 10 minutes, to two significant digits (about 3 KB each).
    private static func latencies() -> Histogram<UInt64> {
        var histogram = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .two)
        histogram.autoResize = true
        return histogram
    }

    mutating func record(commit: Duration, sync: Duration?, actions: Int) {
        commitMicros.record(commit.microseconds)
        if let sync { syncMicros.record(sync.microseconds) }
        actionsPerCommit.record(UInt64(actions))
    }
}

/// The store's instruments in swift-metrics, made once from the factory of ``StoreOptions/metrics``
/// (names prefixed `reel_`, durations in seconds as Prometheus has them).
struct StoreInstruments: Sendable {
    let actionsAcknowledged: Counter
    let commitFailures: Counter
    let checkpointsWritten: Counter
    let commitDuration: CoreMetrics.Timer
    let syncDuration: CoreMetrics.Timer
    let actionsPerCommit: Recorder
    let lmdbCommitDuration: CoreMetrics.Timer

    init(factory: any MetricsFactory) {
        actionsAcknowledged = Counter(label: "reel_actions_acknowledged_total", factory: factory)
        commitFailures = Counter(label: "reel_commit_failures_total", factory: factory)
        checkpointsWritten = Counter(label: "reel_checkpoints_written_total", factory: factory)
        commitDuration = CoreMetrics.Timer(label: StoreMetricNames.commitDuration, factory: factory)
        syncDuration = CoreMetrics.Timer(label: StoreMetricNames.syncDuration, factory: factory)
        actionsPerCommit = Recorder(label: StoreMetricNames.actionsPerCommit, factory: factory)
        lmdbCommitDuration = CoreMetrics.Timer(label: StoreMetricNames.lmdbCommitDuration, factory: factory)
    }
}

/// The names of the store's histograms in swift-metrics, for a backend that wants buckets of its
/// own for them.
public enum StoreMetricNames {
    /// A `Timer`: from a group's first reducer to its actions being durable and published.
    public static let commitDuration = "reel_commit_duration_seconds"
    /// A `Timer`: writing a group's records and syncing them.
    public static let syncDuration = "reel_sync_duration_seconds"
    /// A `Recorder`: the actions each commit made durable.
    public static let actionsPerCommit = "reel_actions_per_commit"
    /// A `Timer`: the journal's applier moving acknowledged groups into LMDB (one commit, off the
    /// acknowledgement path).
    public static let lmdbCommitDuration = "reel_lmdb_commit_duration_seconds"
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? .max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Whole microseconds, at least 1 (a histogram of latencies has no use for zero).
    var microseconds: UInt64 {
        let (seconds, attoseconds) = components
        return Swift.max(1, UInt64(clamping: seconds) &* 1_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000_000))
    }
}
