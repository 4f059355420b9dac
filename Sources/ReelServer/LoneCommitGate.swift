import NIOCore
import ReelCore
import ReelProtocol
import ReelStore
import Synchronization

/// Hands an event loop's dispatches to the store, letting at most one per turn of the loop be
/// committed on the loop itself.
///
/// A dispatch read while nothing else is in flight is committed right on the event loop, as
/// Redis does (``Store/submit(batch:peer:expectedSeq:idempotencyKey:commitIfAlone:)``): no hop to
/// the writer thread and back for a client that sends one at a time. But judged one by one, every
/// dispatch read in one turn would be "alone" once the one before it was committed, each with a
/// sync of its own: one event loop (a machine or container with one core) read 50 clients'
/// dispatches and made 50 syncs where one would do. After a lone commit, the rest of the turn goes
/// to the writer's queue, where it forms one group.
///
/// Only its own event loop touches it.
final class LoneCommitGate<State: StoreState>: @unchecked Sendable {
    private let store: Store<State>
    private let loop: any EventLoop
    /// Set by a lone commit; cleared by a task that runs once this turn's reads are handled.
    private var committedAloneThisTurn = false

    init(store: Store<State>, loop: any EventLoop) {
        self.store = store
        self.loop = loop
    }

    func submit(_ params: DispatchParams, peer: Peer) -> DispatchTicket {
        loop.assertInEventLoop()
        let mayCommitHere = !committedAloneThisTurn
        let ticket = store.submit(
            batch: params.actions, peer: peer, expectedSeq: params.expectedSeq, idempotencyKey: params.idempotencyKey,
            commitIfAlone: mayCommitHere
        )
        // Settled before `submit` returned: committed here (or refused at once, which is as well
        // a reason to let the writer have the rest of the turn).
        if mayCommitHere && ticket.isSettled {
            committedAloneThisTurn = true
            loop.execute { self.committedAloneThisTurn = false }
        }
        return ticket
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
