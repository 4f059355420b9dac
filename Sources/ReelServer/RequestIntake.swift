import DequeModule
import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// A request the intake routed to the connection's task: anything but a dispatch or an answer
/// known at once, which the intake carries out itself.
struct RoutedRequest: Sendable {
    let slot: Int
    let route: RequestRouter<DispatchTicket>.Route
}

/// The first step of every request, on the connection's event loop, right after framing: a slot
/// in the ``Outbox``, the route (``RequestRouter``), and for a dispatch the hand-off to the store,
/// whose commit fills the slot. A dispatch thus costs no task and no wake-up but the store
/// writer's; other requests go on to the ``ConnectionHandler`` after it as a ``RoutedRequest``.
///
/// Back-pressure: when `maxInFlight` answers are owed, lines wait here and the intake asks the
/// socket for no more reads until the outbox has room (``Outbox/onRoom(_:)``). An end of input or
/// a framing error waits behind those lines, so that what was read is answered.
final class RequestIntake<State: StoreState>: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = RoutedRequest
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Held {
        case event(Any)
        case error(any Error)
    }

    private let outbox: Outbox
    private let handler: MethodHandler<State>
    private let commits: LoneCommitGate<State>
    private let peer: Peer
    private var router: RequestRouter<DispatchTicket>
    private var waiting: Deque<ByteBuffer> = []
    private var held: [Held] = []
    private var readHeld = false
    private var removed = false

    init(outbox: Outbox, handler: MethodHandler<State>, commits: LoneCommitGate<State>, peer: Peer) {
        self.outbox = outbox
        self.handler = handler
        self.commits = commits
        self.peer = peer
        // The access policy is fixed for the daemon's life and the peer for the connection's, so
        // what it permits is decided once: asked per request (a dictionary lookup through the
        // generic handler, its metadata looked up at each call), it was 4% of the event loops'
        // time at 50 x 16 pipelined.
        let permitted = Permission.allCases.filter { handler.authorize($0, peer) }
        router = RequestRouter(permitted: permitted) { method in
            let denial = handler.denial(method, peer: peer)
            if let denial, method.name == Method.Dispatch.name { handler.figures.refused(code: denial.code) }
            return denial
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        outbox.onRoom {
            loop.execute {
                let (intake, context) = bound.value
                intake.roomCame(context: context)
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
        outbox.onRoom {}  // (the callback holds this handler)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        if waiting.isEmpty, take(line, context: context) { return }
        waiting.append(line)
    }

    func read(context: ChannelHandlerContext) {
        if waiting.isEmpty { context.read() } else { readHeld = true }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if waiting.isEmpty { context.fireUserInboundEventTriggered(event) } else { held.append(.event(event)) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if waiting.isEmpty { context.fireErrorCaught(error) } else { held.append(.error(error)) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        commits.flush()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        commits.flush()  // (what was read is committed, answered or not)
        waiting.removeAll()  // the peer is gone: nothing more will be answered
        releaseHeld(context: context)
        context.fireChannelInactive()
    }

    /// Routes a line if it gets a slot; `false` when there is no room (it must wait).
    ///
    /// Specialized for the stock store's state: unspecialized, every request looked the
    /// metadata of the generic types it touches up at run time (1% of `reeld` at 50 x 16).
    @_specialize(where State == JSONValue)
    private func take(_ line: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        let slot: Int
        switch outbox.tryReserve() {
        case .slot(let index): slot = index
        case .full: return false
        case .stopped: return true  // the peer is gone: nothing will be answered
        }
        let route = line.withUnsafeReadableBytes { router.route($0) }
        switch route {
        case .answer(let bytes):
            outbox.fill(slot, with: bytes)
        case .dispatch(let id, let params):
            // Handed to the store with the rest of this read's dispatches when the read is done;
            // alone in the server, committed right here on the event loop, as Redis does: no hop
            // to the writer thread and back (see LoneCommitGate).
            let span = handler.tracer.map { DispatchSpan(params, peer: peer, tracer: $0) }
            let ticket = commits.prepare(params, peer: peer, traceContext: span?.context)
            router.noteDispatched(ticket)
            // Settled on the writer thread by the commit, encoded and written by the event loop
            // (see Answer and Outbox.fill); the closure keeps what the answer needs, not the actions.
            let outbox = self.outbox
            let isBatch = params.isBatch, expectedSeq = params.expectedSeq
            ticket.onSettled { outcome in
                span?.end(outcome, expectedSeq: expectedSeq)
                outbox.fill(slot, with: .dispatch(SettledDispatch(id: id, isBatch: isBatch, expectedSeq: expectedSeq, outcome: outcome)))
            }
        case .subscribe, .unsubscribe, .call:
            context.fireChannelRead(wrapInboundOut(RoutedRequest(slot: slot, route: route)))
        }
        return true
    }

    private func roomCame(context: ChannelHandlerContext) {
        guard !removed, !waiting.isEmpty else { return }
        defer { commits.flush() }  // (also when the outbox fills up again)
        while let line = waiting.first {
            guard take(line, context: context) else { return }
            waiting.removeFirst()
        }
        commits.flush()  // before the events held behind these lines (an end of input)
        releaseHeld(context: context)
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    private func releaseHeld(context: ChannelHandlerContext) {
        let events = held
        held = []
        for event in events {
            switch event {
            case .event(let event): context.fireUserInboundEventTriggered(event)
            case .error(let error): context.fireErrorCaught(error)
            }
        }
    }
}
