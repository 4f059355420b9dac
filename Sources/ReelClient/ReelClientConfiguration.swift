import NIOCore
import NIOPosix

/// How a ``ReelClient`` connects, frames and reconnects.
public struct ReelClientConfiguration: Sendable {
    /// The name sent as `client` in every `hello`, for the daemon's logs.
    public var clientName: String
    /// The longest line the client accepts from the daemon, in bytes. A response can be a whole
    /// state or a page of history, so this is far above the daemon's 1 MiB limit on requests; a
    /// longer line closes the connection with ``ReelClientError/Code/protocolViolation``.
    public var maxLineLength: Int
    /// When and how long to try again after the connection drops.
    public var reconnect: ReconnectPolicy
    /// The event loops the connection runs on.
    public var eventLoopGroup: any EventLoopGroup

    /// - Parameters:
    ///   - clientName: The name sent in `hello`.
    ///   - maxLineLength: The longest line accepted from the daemon, in bytes (64 MiB by default).
    ///   - reconnect: The reconnect policy.
    ///   - eventLoopGroup: The event loops to run on; NIO's shared group by default.
    public init(
        clientName: String = "ReelClient",
        maxLineLength: Int = 64 << 20,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.clientName = clientName
        self.maxLineLength = maxLineLength
        self.reconnect = reconnect
        self.eventLoopGroup = eventLoopGroup
    }
}

/// Exponential backoff between reconnection attempts.
///
/// After a drop the client tries at once, then waits ``initialDelay``, doubling each time up to
/// ``maximumDelay``. It stops when reconnecting has taken ``giveUpAfter``: then every waiting
/// request fails with ``ReelClientError/Code/connectionFailed``, every subscription ends with that
/// error, and the client is closed.
public struct ReconnectPolicy: Sendable {
    /// The wait after the first failed attempt.
    public var initialDelay: Duration
    /// The longest wait between two attempts.
    public var maximumDelay: Duration
    /// How long to keep trying after a drop; `nil` keeps trying for as long as the client is open
    /// (requests made meanwhile wait, unless their task is cancelled).
    public var giveUpAfter: Duration?

    /// - Parameters:
    ///   - initialDelay: The wait after the first failed attempt (50 ms by default).
    ///   - maximumDelay: The longest wait between attempts (2 s by default).
    ///   - giveUpAfter: How long to keep trying, or `nil` for as long as the client is open.
    public init(initialDelay: Duration = .milliseconds(50), maximumDelay: Duration = .seconds(2), giveUpAfter: Duration? = nil) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.giveUpAfter = giveUpAfter
    }

    /// Never reconnect: the first drop closes the client.
    public static let disabled = ReconnectPolicy(giveUpAfter: .zero)

    /// The wait after `delay`: doubled, at most ``maximumDelay``.
    func delay(after delay: Duration) -> Duration {
        min(delay * 2, maximumDelay)
    }
}
