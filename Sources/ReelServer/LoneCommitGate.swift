import NIOCore
import ReelCore
import ReelProtocol
import ReelStore
import Synchronization
import Tracing

/// Hands an event loop's dispatches to the store, a read's at a time, letting at most one per turn
/// of the loop be committed on the loop itself.
///
/// A dispatch read while nothing else is in flight is committed right on the event loop, as
/// Redis does (``Store/submit(_:commitIfAlone:)``): no hop to the writer thread and back for a
/// client that sends one at a time. But judged one by one, every dispatch read in one turn would
/// be "alone" once the one before it was committed, each with a sync of its own: one event loop
/// (a machine or container with one core) read 50 clients' dispatches and made 50 syncs where one
/// would do. After a lone commit, the rest of the turn goes to the writer's queue, where it forms
/// one group.
///
/// The dispatches of one read (a pipelining client's sixteen, say) are prepared as they are
/// routed and handed over together when the read is done (``flush()``: the intake calls it at
/// the read's end, and a task at the end of the turn catches any it did not), one lock of the
/// writer's queue for all of them.
///
/// Only its own event loop touches it.
final class LoneCommitGate<State: StoreState>: @unchecked Sendable {
    private let store: Store<State>
    private let loop: any EventLoop
    /// Set by a lone commit; cleared by the end-of-turn task, which a prepared dispatch (and
    /// so any lone commit) always has scheduled.
    private var committedAloneThisTurn = false
    /// Dispatches routed and not yet handed to the store.
    private var batch = DispatchBatch()
    /// Whether the end-of-turn task is scheduled.
    private var turnEndScheduled = false

    init(store: Store<State>, loop: any EventLoop) {
        self.store = store
        self.loop = loop
    }

    /// Prepares a dispatch, handed to the store at the next ``flush()``; its ticket at once.
    func prepare(_ params: DispatchParams, peer: Peer, traceContext: ServiceContext? = nil) -> DispatchTicket {
        loop.assertInEventLoop()
        if !turnEndScheduled {
            turnEndScheduled = true
            loop.execute { self.turnEnded() }
        }
        return store.prepare(
            batch: params.actions, peer: peer, expectedSeq: params.expectedSeq, idempotencyKey: params.idempotencyKey,
            meta: params.meta, traceContext: traceContext, into: &batch
        )
    }

    /// Hands what was prepared to the store: committed here when it is one dispatch alone in the
    /// server and none was this turn, to the writer otherwise.
    func flush() {
        loop.assertInEventLoop()
        guard !batch.isEmpty else { return }
        let mayCommitHere = !committedAloneThisTurn && batch.count == 1
        let ready = batch
        batch = DispatchBatch()
        if store.submit(ready, commitIfAlone: mayCommitHere) { committedAloneThisTurn = true }
    }

    /// Once this turn's reads are handled: hands over what the intake did not, and lets the next
    /// turn commit alone again.
    private func turnEnded() {
        turnEndScheduled = false
        flush()
        committedAloneThisTurn = false
    }
}

/// One ``LoneCommitGate`` per event loop, made when a connection on that loop first needs it.
final class LoneCommitGates<State: StoreState>: Sendable {
    private let store: Store<State>
    private let byLoop = Mutex<[ObjectIdentifier: LoneCommitGate<State>]>([:])

    init(store: Store<State>) {
        self.store = store
    }

    func gate(for loop: any EventLoop) -> LoneCommitGate<State> {
        byLoop.withLock { byLoop in
            let key = ObjectIdentifier(loop)
            if let existing = byLoop[key] { return existing }
            let made = LoneCommitGate(store: store, loop: loop)
            byLoop[key] = made
            return made
        }
    }
}
