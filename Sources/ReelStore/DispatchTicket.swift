import Synchronization

/// A dispatch handed to the writer, whose outcome comes later: lets a caller fix the order of
/// several dispatches (they get seqs in the order they were submitted) and await them apart.
///
/// Any number of tasks may wait on one ticket.
public final class DispatchTicket: Sendable {
    private let state = Mutex<(result: Result<DispatchResult, StoreError>?, waiters: [CheckedContinuation<Result<DispatchResult, StoreError>, Never>])>((nil, []))

    init() {}

    init(failed error: StoreError) {
        state.withLock { $0.result = .failure(error) }
    }

    func resolve(_ result: Result<DispatchResult, StoreError>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// Whether the outcome is known.
    public var isSettled: Bool { state.withLock { $0.result != nil } }

    /// The outcome, once the actions are durable (or refused).
    public func result() async throws(StoreError) -> DispatchResult {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DispatchResult, StoreError>, Never>) in
            let known = state.withLock { state in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let known { continuation.resume(returning: known) }
        }
        return try outcome.get()
    }
}
