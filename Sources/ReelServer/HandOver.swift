#if canImport(Glibc)
import Glibc
#endif
import CReelSocket
import ReelCrashPoints
import ReelProtocol
import Synchronization

/// The running daemon's side of a take-over: on `handOver`, it sends a duplicate of its listening
/// socket to the new daemon, which accepts from it as soon as it serves (connections that come
/// meanwhile wait in the socket's backlog, none is refused), and starts to stop: it accepts no
/// more connections, answers what it had read, commits what it had accepted and exits, leaving
/// the socket's file and the data directory to the newcomer.
///
/// The daemon awaits ``requests`` to start its graceful shutdown, and asks ``isHandingOver``
/// while it stops: no shutdown checkpoint (the newcomer waits for the data directory meanwhile,
/// and folds with reducers of its own), and the socket's file stays.
public final class HandOver: Sendable {
    private struct Standing {
        var listener: CInt?
        var handingOver = false
        var progress: (report: TakeOverProgressReport, at: ContinuousClock.Instant)?
    }

    /// A report older than this is taken for a fold that ended without a hand-over (its daemon
    /// died, or gave up): reports come every 2 s while a fold goes on.
    static let reportLifetime: Duration = .seconds(10)

    private let standing = Mutex(Standing())
    private let continuation: AsyncStream<Void>.Continuation
    /// One element when a hand-over starts.
    public let requests: AsyncStream<Void>

    /// The timeout of systemd's watchdog this daemon feeds, for the newcomer to feed in its place.
    public let watchdogMicroseconds: UInt64?

    public init(watchdogMicroseconds: UInt64? = nil) {
        self.watchdogMicroseconds = watchdogMicroseconds
        (requests, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether a hand-over has started: the daemon is stopping for a newer one.
    public var isHandingOver: Bool { standing.withLock { $0.handingOver } }

    /// How far the fold of a daemon preparing to take over got, by its last report
    /// (`takeOverProgress`); `nil` when none reported.
    public var progress: TakeOverProgressReport? {
        standing.withLock { standing in
            guard let progress = standing.progress, ContinuousClock.now - progress.at < Self.reportLifetime else { return nil }
            return progress.report
        }
    }

    func report(_ progress: TakeOverProgressReport) {
        standing.withLock { $0.progress = (progress, ContinuousClock.now) }
    }

    /// The listening socket, once the server has it.
    func listening(on descriptor: CInt) {
        standing.withLock { $0.listener = descriptor }
    }

    /// Sends the listening socket to `receiver` and starts the hand-over.
    ///
    /// - Throws: 1009 when a hand-over has started already or the server does not listen yet;
    ///   -32602 when nothing receives at `receiver`.
    func handOver(to receiver: String) throws(RPCError) {
        try standing.withLock { standing throws(RPCError) in
            guard !standing.handingOver else {
                throw RPCError(code: RPCError.Code.shuttingDown, message: "this daemon is handing over already")
            }
            guard let listener = standing.listener else {
                throw RPCError(code: RPCError.Code.shuttingDown, message: "this daemon does not listen yet")
            }
            // The watchdog's timeout travels with the socket too: an answer lost on the way (this
            // daemon stops as soon as it has sent the socket) must not leave the unit unfed.
            guard reel_send_descriptor(receiver, listener, watchdogMicroseconds ?? 0) == 0 else {
                let reason = String(cString: strerror(errno))
                throw .invalidParams("cannot send the listening socket to \(receiver): \(reason)")
            }
            standing.handingOver = true
        }
        CrashPoint.handOverSent.reach()
        continuation.yield()
        continuation.finish()
    }
}
