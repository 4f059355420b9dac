#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import Synchronization

/// Every event loop accepts connections from the listening socket and serves those it accepted,
/// one loop at a time: the loop whose turn it is accepts what is ready, then hands the turn on.
///
/// One accepting loop handing half the connections to the other (NIO's `ServerBootstrap` with a
/// group of loops) crosses between the loops three times per connection (its setup there, the
/// outcome back, its registration there), each a wake-up of an idle thread: a tenth or more of
/// what a short connection costs the daemon (BENCHMARKS.md, "What moved the figures"). Here each
/// loop has a listening channel of its own on a duplicate of the socket, and its connections
/// never leave it. Only the loop whose turn it is listens (`autoRead` on): were two listening,
/// both would be woken for each connection, and the one that finds nothing to accept breaks NIO's
/// rule that a readable socket reads. A loop's listening stops before the next one's starts, so
/// that never happens. The turn goes to the least busy loop once the one listening has ``slack``
/// connections more, and at once in a burst (a read that took ``acceptsPerRead``), whose
/// connections the loops then accept side by side: long-lived connections spread as evenly as
/// NIO's round robin spread them, while a short one (a `reel` command) mostly stays on the loop
/// listening, with no hand-over at all.
final class AcceptTurns: Sendable {
    /// How many more open connections than the least busy loop the listening loop may have
    /// before it hands the turn to that one.
    static let slack = 4
    /// The most connections a listening channel accepts per read (NIO's `maxMessagesPerRead`).
    /// A read that took this many leaves more waiting, likely: a burst, which the next loop
    /// then accepts beside this one.
    static let acceptsPerRead = 4

    private struct Loops {
        var listeners: [any Channel] = []
        /// Connections open on each loop, and accepted by each since the start.
        var open: [Int]
        var accepted: [Int]
        /// The loop that listens now.
        var listening = 0
    }

    private let loops: Mutex<Loops>
    private let logger: Logger

    init(loops count: Int, logger: Logger) {
        loops = Mutex(Loops(open: Array(repeating: 0, count: count), accepted: Array(repeating: 0, count: count)))
        self.logger = logger
    }

    /// The handler of the listening channel of loop `index`: its turn, which may pass on after
    /// each read that accepted something, and pauses after an accept that failed for want of
    /// descriptors or memory.
    func handler(index: Int) -> some ChannelInboundHandler {
        Turn(turns: self, index: index)
    }

    /// How long accepting pauses after `error`: a second when the process or the system is out of
    /// descriptors or memory; not at all for anything else (a peer that gave up before it was
    /// accepted, `ECONNABORTED`). NIO leaves a channel whose accept failed registered for reading
    /// (and its `AcceptBackoffHandler` delays only the reads asked for, which such a channel does
    /// not ask): the socket, still readable, would wake the loop at once, again and again, a core
    /// spinning and a line logged at each turn.
    static func pause(after error: IOError) -> TimeAmount? {
        switch error.errnoCode {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: .seconds(1)
        default: nil
        }
    }

    fileprivate func hasTurn(_ index: Int) -> Bool {
        loops.withLock { $0.listening == index }
    }

    fileprivate func acceptFailed(_ error: IOError, pausing pause: TimeAmount) {
        let reason = String(cString: strerror(error.errnoCode))
        let milliseconds = pause.nanoseconds / 1_000_000
        let after = milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms"
        logger.warning(
            "cannot accept connections: \(reason) (the open files' limit: LimitNOFILE= or ulimit -n, against --max-connections); trying again in \(after)"
        )
    }

    /// Starts the turns once every loop's channel is bound: the first loop listens first.
    func start(_ channels: [any Channel]) {
        loops.withLock { $0.listeners = channels }
        channels.first?.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
    }

    /// Connections each loop accepted so far.
    var acceptedByLoop: [Int] { loops.withLock { $0.accepted } }

    /// Whether each loop's channel listens now (its `autoRead`).
    func listening() async throws -> [Bool] {
        var listening: [Bool] = []
        for channel in loops.withLock({ $0.listeners }) {
            listening.append(try await channel.getOption(ChannelOptions.autoRead).get())
        }
        return listening
    }

    fileprivate func accepted(_ connection: any Channel, by index: Int) {
        loops.withLock {
            $0.open[index] += 1
            $0.accepted[index] += 1
        }
        connection.closeFuture.whenComplete { _ in self.loops.withLock { $0.open[index] -= 1 } }
    }

    /// After a read of loop `index` that accepted `count` connections, on its event loop: when it
    /// has more open than the least busy other loop and the slack, or the read took as many as a
    /// read may (a burst) and that loop has no more open, it stops listening now, then that loop
    /// starts (on its own thread).
    fileprivate func readEnded(by index: Int, accepting count: Int, channel: any Channel) {
        let next: (any Channel)? = loops.withLock { loops in
            guard loops.listening == index, loops.listeners.count > 1,
                let least = loops.open.indices.filter({ $0 != index }).min(by: { loops.open[$0] < loops.open[$1] }),
                loops.open[index] > loops.open[least] + Self.slack
                    || (count >= Self.acceptsPerRead && loops.open[least] <= loops.open[index])
            else { return nil }
            loops.listening = least
            return loops.listeners[least]
        }
        guard let next else { return }
        // Synchronous on the channel's own loop: its interest in reading is gone before the next
        // loop is asked to listen.
        try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        next.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
    }

    private final class Turn: ChannelInboundHandler {
        typealias InboundIn = any Channel
        typealias InboundOut = any Channel

        private let turns: AcceptTurns
        private let index: Int
        private var acceptedThisRead = 0

        init(turns: AcceptTurns, index: Int) {
            self.turns = turns
            self.index = index
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            acceptedThisRead += 1
            let connection = unwrapInboundIn(data)
            assert(connection.eventLoop === context.eventLoop, "a connection is served by the loop that accepted it")
            turns.accepted(connection, by: index)
            context.fireChannelRead(data)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if let error = error as? IOError, let pause = AcceptTurns.pause(after: error) {
                turns.acceptFailed(error, pausing: pause)
                // Not listening (at once), then listening again once the pause is over, if the
                // turn is still this loop's (only this loop hands it on, after an accept).
                let channel = context.channel, turns = self.turns, index = self.index
                try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                context.eventLoop.scheduleTask(in: pause) {
                    if turns.hasTurn(index) { try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true) }
                }
            }
            context.fireErrorCaught(error)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if acceptedThisRead > 0 {
                turns.readEnded(by: index, accepting: acceptedThisRead, channel: context.channel)
                acceptedThisRead = 0
            }
            context.fireChannelReadComplete()
        }
    }
}

/// The listening channels, one per event loop.
struct Listeners: Sendable {
    let channels: [any Channel]

    /// Calls `body` when any of them closes (more than once when several do).
    func whenAnyCloses(_ body: @escaping @Sendable () -> Void) {
        for channel in channels { channel.closeFuture.whenComplete { _ in body() } }
    }

    /// Starts closing them all.
    func closeNow() {
        for channel in channels { channel.close(promise: nil) }
    }

    /// Closes them all.
    func close() async {
        for channel in channels { try? await channel.close() }
    }
}
