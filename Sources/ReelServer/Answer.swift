import ReelProtocol
import ReelStore

/// What fills a connection's slot: an answer already encoded, or a settled dispatch whose answer
/// is encoded by the event loop as it writes, straight into the outgoing bytes.
///
/// A dispatch is settled on the store's writer thread, the one thread every dispatch passes
/// through; encoding its answer there (an allocation and a copy per answer) made that thread
/// slower for everyone. The event loops, one per core, encode it instead.
enum Answer: Sendable {
    case line([UInt8])
    case dispatch(SettledDispatch)
}

/// A dispatch's outcome with what its answer needs from the request.
struct SettledDispatch: Sendable {
    let id: RPCID
    let isBatch: Bool
    let expectedSeq: UInt64?
    let outcome: DispatchTicket.Outcome

    /// Appends the answer's line; a refusal is counted in `figures` by its code.
    func encode(into bytes: inout [UInt8], figures: ServerFigures?) {
        switch outcome {
        case .success(let result):
            RPCSuccess(id: id, result: DispatchOutcome(seqs: result.seqs, duplicate: result.duplicate, batch: isBatch))
                .encode(into: &bytes)
        case .failure(let error):
            let refusal = RPCError(error, expectedSeq: expectedSeq)
            figures?.refused(code: refusal.code)
            RPCResponse(id: id, error: refusal).encode(into: &bytes)
        }
    }
}
