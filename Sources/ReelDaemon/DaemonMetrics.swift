import Foundation
import Prometheus
import ReelCore
import ReelProtocol
import ReelServer
import ReelStorage
import ReelStore

/// The daemon's Prometheus registry: the store and the server count and time into it through
/// swift-metrics (its ``factory``), and the figures that are read rather than counted are set
/// from the store, the map and the server right before each scrape (``sample(store:server:)``).
///
/// Every name begins with `reel_`. Counters: `reel_actions_acknowledged_total`,
/// `reel_dispatches_refused_total{code}`, `reel_commit_failures_total`,
/// `reel_checkpoints_written_total`. Histograms: `reel_commit_duration_seconds`,
/// `reel_sync_duration_seconds`, `reel_actions_per_commit`. Gauges: see ``sample(store:server:)``.
final class DaemonMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    private let seq: Gauge
    private let connections: Gauge
    private let subscriptions: [(SubscriptionMode, Gauge)]
    private let lag: [(SubscriptionMode, Gauge)]
    private let mapUsed: Gauge
    private let journalBacklog: Gauge
    private let mapSize: Gauge
    private let mapMax: Gauge
    private let readerSlotsUsed: Gauge
    private let readerSlots: Gauge
    private let lastCheckpointSeq: Gauge
    private let lastCheckpointAge: Gauge
    private let openDuration: Gauge
    private let replayedAtOpen: Gauge
    /// A take-over's fold beside this daemon, by its last report (0 without one).
    private let takeOverFolded: Gauge
    private let takeOverLatest: Gauge
    private let takeOverRemaining: Gauge
    /// With `--shared-log` only (a node of a cluster).
    private let sharedLog: SharedLogGauges?

    /// How a node stands in the shared log: `reel_shared_log_latest_seq`, `reel_shared_log_lag_seqs`,
    /// `reel_shared_log_reachable` (1 or 0) and `reel_shared_log_refusing` (1 when this node's copy
    /// disagrees with the log and it refuses dispatches).
    private struct SharedLogGauges: Sendable {
        let latest: Gauge, lag: Gauge, reachable: Gauge, refusing: Gauge

        init(_ registry: PrometheusCollectorRegistry) {
            latest = registry.gauge("reel_shared_log_latest_seq", help: "The latest seq this node knows the shared log to have.")
            lag = registry.gauge("reel_shared_log_lag_seqs", help: "How many seqs this node's copy is behind the shared log.")
            reachable = registry.gauge("reel_shared_log_reachable", help: "1 while the shared log answers, 0 while it does not.")
            refusing = registry.gauge(
                "reel_shared_log_refusing", help: "1 when this node's copy disagrees with the shared log and it refuses dispatches."
            )
        }
    }

    /// - Parameters:
    ///   - maxMapSize: the map's limit (`max-map-size`), reported as `reel_map_max_bytes`.
    ///   - sharedLog: whether the daemon follows a shared log (its gauges exist only then).
    init(maxMapSize: Int, sharedLog: Bool = false) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        // Commits take tens of microseconds to a few milliseconds here, not the web's 5 ms to 10 s.
        let durations: [Duration] = [
            .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
            .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        factory.durationHistogramBuckets = [
            StoreMetricNames.commitDuration: durations, StoreMetricNames.syncDuration: durations,
            StoreMetricNames.lmdbCommitDuration: durations,
        ]
        factory.valueHistogramBuckets = [StoreMetricNames.actionsPerCommit: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 10_000]]
        self.factory = factory

        seq = registry.gauge("reel_seq", help: "The latest committed seq.")
        connections = registry.gauge("reel_connections", help: "Connections open.")
        subscriptions = SubscriptionMode.allCases.map { mode in
            (mode, registry.gauge("reel_subscriptions", labels: [("mode", mode.rawValue)], help: "Subscriptions open, by mode."))
        }
        lag = SubscriptionMode.allCases.map { mode in
            (mode, registry.gauge(
                "reel_subscription_lag_seqs", labels: [("mode", mode.rawValue)],
                help: "By mode, the most seqs one subscription's deliveries are behind the latest commit."
            ))
        }
        mapUsed = registry.gauge("reel_map_used_bytes", help: "Bytes of the LMDB map in use.")
        journalBacklog = registry.gauge(
            "reel_journal_backlog_bytes", help: "Bytes of acknowledged actions in the journal that LMDB does not have yet."
        )
        mapSize = registry.gauge("reel_map_size_bytes", help: "The LMDB map's current size (it grows up to max-map-size).")
        mapMax = registry.gauge("reel_map_max_bytes", help: "The limit the LMDB map may grow to (max-map-size).")
        mapMax.set(Double(maxMapSize))
        readerSlotsUsed = registry.gauge("reel_reader_slots_used", help: "LMDB reader slots in use (a high-water mark).")
        readerSlots = registry.gauge("reel_reader_slots", help: "The size of LMDB's reader table.")
        lastCheckpointSeq = registry.gauge("reel_last_checkpoint_seq", help: "The seq of the newest checkpoint.")
        lastCheckpointAge = registry.gauge(
            "reel_last_checkpoint_age_seconds", help: "Seconds since the newest checkpoint was made (0 when there is none)."
        )
        openDuration = registry.gauge("reel_open_duration_seconds", help: "How long restoring the state took at startup.")
        replayedAtOpen = registry.gauge("reel_replayed_at_open_actions", help: "Actions replayed at startup.")
        takeOverFolded = registry.gauge("reel_take_over_folded_seq", help: "The seq a daemon preparing to take this one over has folded to (0: none).")
        takeOverLatest = registry.gauge("reel_take_over_latest_seq", help: "The seq that daemon folds towards.")
        takeOverRemaining = registry.gauge("reel_take_over_remaining_seconds", help: "That daemon's estimate of its fold's remaining time.")
        self.sharedLog = sharedLog ? SharedLogGauges(registry) : nil
    }

    /// Sets the gauges from the store, its data directory's map and the server.
    func sample(store statistics: StoreStatistics, usage: MapUsage, server: ServerFigures.Snapshot, takeOver: TakeOverProgressReport? = nil) {
        takeOverFolded.set(Double(takeOver?.folded ?? 0))
        takeOverLatest.set(Double(takeOver?.latest ?? 0))
        takeOverRemaining.set(takeOver?.remainingSeconds ?? 0)
        seq.set(Double(statistics.seq))
        connections.set(Double(server.connections))
        for (mode, gauge) in subscriptions { gauge.set(Double(server.subscriptions[mode] ?? 0)) }
        for (mode, gauge) in lag { gauge.set(Double(server.maxLag[mode] ?? 0)) }
        mapUsed.set(Double(usage.bytesUsed))
        journalBacklog.set(Double(statistics.journalBacklogBytes))
        mapSize.set(Double(usage.mapSize))
        readerSlotsUsed.set(Double(usage.readerSlotsUsed))
        readerSlots.set(Double(usage.maxReaders))
        lastCheckpointSeq.set(Double(statistics.lastCheckpointSeq))
        let age = statistics.lastCheckpointTime.map { max(0, Double(Timestamp.now().nanosecondsSince1970 - $0.nanosecondsSince1970) / 1e9) }
        lastCheckpointAge.set(age ?? 0)
        let (seconds, attoseconds) = statistics.openDuration.components
        openDuration.set(Double(seconds) + Double(attoseconds) / 1e18)
        replayedAtOpen.set(Double(statistics.replayedAtOpen))
        if let gauges = sharedLog, let status = statistics.sharedLog {
            gauges.latest.set(Double(max(status.latestSeq, statistics.seq)))
            gauges.lag.set(Double(status.lag(localSeq: statistics.seq)))
            gauges.reachable.set(status.reachable == true ? 1.0 : 0.0)
            gauges.refusing.set(status.refusal == nil ? 0.0 : 1.0)
        }
    }
}

extension PrometheusCollectorRegistry {
    /// A gauge by its full name (`reel_…`, which the descriptor keeps whole when the unit is empty).
    fileprivate func gauge(_ name: String, labels: [(String, String)] = [], help: String) -> Gauge {
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        return labels.isEmpty ? makeGauge(descriptor: descriptor) : makeGauge(descriptor: descriptor, labels: labels)
    }
}
