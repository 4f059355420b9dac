import ReelCore
import ReelProtocol
import ReelQuery
import ReelStore
import Tracing

/// The span of one `dispatch` request (`reeld --otlp-endpoint`): from the line being routed to
/// the answer being settled (durable, or refused), a child of the span whose W3C `traceparent`
/// the dispatch's meta carries, so that a trace crosses from the app into the store. The commit
/// that makes it durable is a span of its own that links to this one (``StoreOptions/tracer``).
///
/// Attributes follow OpenTelemetry's RPC conventions (`rpc.system`, `rpc.method`,
/// `rpc.jsonrpc.error_code`) and add the store's: `reel.action.type` (the first action's),
/// `reel.actions`, `reel.seq.first`/`reel.seq.last`, `reel.duplicate`, `reel.peer.uid`/`pid`,
/// `reel.correlation_id`.
struct DispatchSpan: Sendable {
    private let span: any Span

    /// The context the store's commit span links to.
    var context: ServiceContext { span.context }

    init(_ params: DispatchParams, peer: Peer, tracer: any Tracer) {
        var parent = ServiceContext.topLevel
        if let traceparent = params.meta?.traceparent {
            tracer.extract(["traceparent": traceparent], into: &parent, using: TraceparentExtractor())
        }
        span = tracer.startSpan("dispatch", context: parent, ofKind: .server)
        // A span the sampler left out records nothing: spare it the attributes.
        guard span.isRecording else { return }
        span.updateAttributes { attributes in
            attributes["rpc.system"] = "jsonrpc"
            attributes["rpc.method"] = Method.Dispatch.name.rawValue
            attributes["reel.actions"] = params.actions.count
            if let first = params.actions.first { attributes["reel.action.type"] = first.type }
            attributes["reel.peer.uid"] = Int(peer.uid)
            attributes["reel.peer.pid"] = Int(peer.pid)
            if let correlationId = params.meta?.correlationId { attributes["reel.correlation_id"] = correlationId }
        }
    }

    /// Ends the span with what the dispatch came to.
    func end(_ outcome: DispatchTicket.Outcome, expectedSeq: UInt64?) {
        guard span.isRecording else { return span.end() }
        switch outcome {
        case .success(let result):
            span.updateAttributes { attributes in
                attributes["reel.seq.first"] = Int(result.seqs.lowerBound)
                attributes["reel.seq.last"] = Int(result.seqs.upperBound)
                if result.duplicate { attributes["reel.duplicate"] = true }
            }
        case .failure(let error):
            let wire = RPCError(error, expectedSeq: expectedSeq)
            span.attributes["rpc.jsonrpc.error_code"] = wire.code
            span.setStatus(SpanStatus(code: .error, message: wire.message))
        }
        span.end()
    }
}

/// Reads the `traceparent` handed to the tracer's propagator.
private struct TraceparentExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key.lowercased()]
    }
}
