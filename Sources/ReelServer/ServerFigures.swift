import CoreMetrics
import ReelProtocol
import Synchronization

/// What the socket server knows about its clients, for `stats` and the daemon's metrics:
/// connections open, subscriptions by mode and how far behind each mode's deliveries are, and
/// dispatches refused by error code (also counted in swift-metrics as
/// `reel_dispatches_refused_total{code}`).
public final class ServerFigures: Sendable {
    /// The figures at one moment.
    public struct Snapshot: Sendable, Equatable {
        /// Connections open now.
        public var connections = 0
        /// Subscriptions by mode.
        public var subscriptions: [SubscriptionMode: Int] = [:]
        /// By mode, the most seqs any of its subscriptions is behind the newest commit.
        public var maxLag: [SubscriptionMode: UInt64] = [:]
        /// Dispatches refused since the server started, by error code.
        public var refusedByCode: [Int: UInt64] = [:]
    }

    private struct Refusals {
        var counts: [Int: UInt64] = [:]
        var counters: [Int: Counter] = [:]
    }

    let connections = ConnectionCount()
    private let refusals = Mutex(Refusals())
    private let feed = Mutex<UpdateFeed?>(nil)
    private let turns = Mutex<AcceptTurns?>(nil)
    private let metrics: any MetricsFactory

    /// - Parameter metrics: where refusals are counted (swift-metrics).
    public init(metrics: any MetricsFactory) {
        self.metrics = metrics
    }

    func serve(_ feed: UpdateFeed) {
        self.feed.withLock { $0 = feed }
    }

    func serve(_ turns: AcceptTurns) {
        self.turns.withLock { $0 = turns }
    }

    /// How the event loops take turns at accepting connections (once the server listens).
    var acceptTurns: AcceptTurns? { turns.withLock { $0 } }

    /// A dispatch was answered with error `code`.
    func refused(code: Int) {
        let counter = refusals.withLock { refusals in
            refusals.counts[code, default: 0] += 1
            if let counter = refusals.counters[code] { return counter }
            let counter = Counter(label: "reel_dispatches_refused_total", dimensions: [("code", "\(code)")], factory: metrics)
            refusals.counters[code] = counter
            return counter
        }
        counter.increment()
    }

    /// The figures now.
    public func snapshot() -> Snapshot {
        var snapshot = Snapshot()
        snapshot.connections = connections.current
        snapshot.refusedByCode = refusals.withLock { $0.counts }
        for mode in SubscriptionMode.allCases {
            snapshot.subscriptions[mode] = 0
            snapshot.maxLag[mode] = 0
        }
        for (mode, lag) in feed.withLock({ $0 })?.subscriptionLags() ?? [] {
            snapshot.subscriptions[mode, default: 0] += 1
            snapshot.maxLag[mode] = max(snapshot.maxLag[mode] ?? 0, lag)
        }
        return snapshot
    }
}

extension StatsResult {
    /// Adds what the socket server knows: connections, subscriptions, lag, refusals by code.
    public mutating func add(_ server: ServerFigures.Snapshot) {
        connections = server.connections
        subscriptions = Dictionary(uniqueKeysWithValues: server.subscriptions.map { ($0.key.rawValue, $0.value) })
        subscriptionLag = Dictionary(uniqueKeysWithValues: server.maxLag.map { ($0.key.rawValue, $0.value) })
        refusedByCode = Dictionary(uniqueKeysWithValues: server.refusedByCode.map { ("\($0.key)", $0.value) })
    }
}
