import ReelCore
import Tracing

/// Dispatches made ready for the writer and handed to it together, in order: a server that reads
/// sixteen pipelined dispatches at once takes the writer's queue lock once for them, not sixteen
/// times (with two event loops and the writer on that lock, a third of the hand-off's time was
/// spent waiting for it, or waking its waiters, at 50 × 16 pipelined).
///
/// Made with ``Store/prepare(batch:peer:expectedSeq:idempotencyKey:meta:traceContext:into:)``; nothing in it reaches
/// the writer before ``Store/submit(_:commitIfAlone:)``.
public struct DispatchBatch: Sendable {
    var requests: [DispatchRequest] = []

    public init() {}

    public var isEmpty: Bool { requests.isEmpty }
    public var count: Int { requests.count }
}

extension Store {
    /// Adds a dispatch to `batch` and returns its ticket, which settles once the batch is
    /// submitted and the dispatch committed (or refused). Dispatches of one batch, and batches
    /// submitted one after the other, get their seqs in that order.
    ///
    /// `traceContext` is the context of the caller's span for this dispatch: the commit span
    /// that makes it durable links to it (with ``StoreOptions/tracer`` set).
    public func prepare(
        batch actions: [Action], peer: Peer = .currentProcess, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil,
        meta: ActionMeta? = nil, traceContext: ServiceContext? = nil, into batch: inout DispatchBatch
    ) -> DispatchTicket {
        let ticket = DispatchTicket()
        // (A dispatch without actions is refused by the writer, as any other refusal.)
        batch.requests.append(DispatchRequest(
            actions: actions, peer: peer, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta,
            traceContext: traceContext, ticket: ticket, counted: true
        ))
        return ticket
    }

    /// Hands a batch to the writer. With `commitIfAlone`, a batch of one dispatch submitted while
    /// no other is in flight and the writer is idle is committed on the caller's thread, before
    /// this returns (as ``submit(batch:peer:expectedSeq:idempotencyKey:meta:commitIfAlone:)`` does).
    ///
    /// - Returns: whether the batch was committed here.
    @discardableResult
    public func submit(_ batch: consuming DispatchBatch, commitIfAlone: Bool = false) -> Bool {
        let requests = batch.requests
        guard !requests.isEmpty else { return false }
        let writer = self.writer
        if commitIfAlone, requests.count == 1, writer.commitAlone(requests[0]) { return true }
        writer.inFlight.value.add(requests.count, ordering: .relaxed)
        if let refused = writer.queue.submit(contentsOf: requests) {
            for request in refused { request.reply(.failure(StoreError(.shuttingDown, "the store is shutting down")), inFlight: writer.inFlight) }
        }
        return false
    }
}
