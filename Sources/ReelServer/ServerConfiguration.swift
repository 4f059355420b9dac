import CoreMetrics
import NIOCore
import ReelProtocol
import Tracing

/// How the socket server runs. The daemon fills it from its configuration.
public struct ServerConfiguration: Sendable {
    /// Per-connection limits; each answers with its protocol error and closes only that connection.
    public struct Limits: Sendable {
        /// The longest request line, in bytes (default: 1 MiB, docs/REFERENCE.md).
        public var maxLineLength = WireProtocol.defaultMaxLineLength
        /// A peer silent this long in the middle of a line is cut off.
        public var midLineTimeout: TimeAmount = .seconds(30)
        /// Connections open at once; one more is answered with 1008 and closed.
        public var maxConnections = 256
        /// Subscriptions per connection; one more is refused with 1008.
        public var maxSubscriptionsPerConnection = 64
        /// Requests of one connection being worked on at once; the server stops reading that
        /// connection until answers go out.
        public var maxRequestsInFlight = 128

        public init() {}
    }

    /// The socket's path. It must not exist (the daemon removes a stale one before), unless the
    /// socket is ``adoptedSocket``.
    public var socketPath: String
    /// A listening socket bound already, to serve instead of binding `socketPath` (the socket
    /// systemd passes to a socket-activated daemon). The server closes it when it stops.
    public var adoptedSocket: CInt?
    public var limits = Limits()
    /// The running daemon's side of a take-over, when it allows one (`handOver`).
    public var handOver: HandOver?
    /// Called right after the socket is bound, before any connection is accepted: the daemon sets
    /// the socket's mode and group here.
    public var onBound: @Sendable (String) throws -> Void = { _ in }
    /// The version `hello` reports.
    public var serverVersion = ReelRelease.version
    /// Where the server counts refusals (swift-metrics): the process's bootstrapped backend unless
    /// another is given.
    public var metrics: any MetricsFactory = MetricsSystem.factory
    /// Starts a `dispatch` span for every dispatch (``DispatchSpan``); `nil`: no spans, and no cost.
    public var tracer: (any Tracer)?

    public init(socketPath: String) {
        self.socketPath = socketPath
    }
}
