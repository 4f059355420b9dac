import Synchronization

/// A dispatch handed to the writer, whose outcome comes later: lets a caller fix the order of
/// several dispatches (they get seqs in the order they were submitted) and await them apart.
///
/// Any number of tasks may wait on one ticket, and any number of callbacks be told.
public final class DispatchTicket: Sendable {
    public typealias Outcome = Result<DispatchResult, StoreError>

    /// A callback in a struct: a bare function value kept in an optional or an array is stored
    /// at the generic abstraction and converted back through a thunk allocated at each call.
    private struct Waiter {
        let body: @Sendable (Outcome) -> Void
    }

    private struct State {
        var result: Outcome?
        /// The first waiter, kept apart: a dispatch from the server has exactly one, and an array
        /// for it was an allocation per dispatch.
        var first: Waiter?
        var more: [Waiter] = []
    }

    private let state = Mutex(State())

    init() {}

    init(failed error: StoreError) {
        state.withLock { $0.result = .failure(error) }
    }

    func resolve(_ result: Outcome) {
        // The waiters are moved out (swapped with empty ones), not copied and then cleared: a copy
        // retained each one under the lock only for the clearing to release it.
        var first: Waiter?
        var more: [Waiter] = []
        state.withLock { state in
            state.result = result
            swap(&first, &state.first)
            swap(&more, &state.more)
        }
        first?.body(result)
        for waiter in more { waiter.body(result) }
    }

    /// Whether the outcome is known.
    public var isSettled: Bool { state.withLock { $0.result != nil } }

    /// The outcome, once the actions are durable (or refused).
    public func result() async throws(StoreError) -> DispatchResult {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            onSettled { continuation.resume(returning: $0) }
        }
        return try outcome.get()
    }

    /// Calls `body` with the outcome once it is known: at once, on the caller's thread, when it is
    /// known already; otherwise on the store's writer thread, right after the commit. The writer
    /// waits for `body`, so it must be short — encode an answer and hand it on — and must not
    /// wait for anything. No task is made and none is woken: this is the path of an answer that
    /// costs the fewest hops.
    public func onSettled(_ body: @escaping @Sendable (Outcome) -> Void) {
        let known = state.withLock { state in
            if state.result == nil {
                if state.first == nil { state.first = Waiter(body: body) } else { state.more.append(Waiter(body: body)) }
            }
            return state.result
        }
        if let known { body(known) }
    }
}
