import Tracing

/// The span of one group commit (`reeld --otlp-endpoint`): from the writer taking the group to its
/// answers, with an event when middleware and reducers are done (the rest is the log's write and
/// sync, and the publication).
///
/// One commit makes many dispatches durable, so, as OpenTelemetry's conventions have it for work
/// done in batches, the span links to each dispatch's span rather than belonging to one trace;
/// a commit of a single dispatch is also a child of that dispatch's span, so that the caller's
/// trace shows it inline.
struct CommitSpan {
    /// OpenTelemetry's default limit of links per span: a commit of 10,000 dispatches links to the first ones.
    static let maxLinks = 128

    private let span: any Span
    private let seqBefore: UInt64

    init(_ requests: ArraySlice<DispatchRequest>, tracer: any Tracer, seqBefore: UInt64) {
        let parent: ServiceContext =
            if requests.count == 1, let context = requests.first?.traceContext { context } else { .topLevel }
        span = tracer.startSpan("commit", context: parent, ofKind: .internal)
        self.seqBefore = seqBefore
        guard span.isRecording else { return }
        for request in requests.prefix(Self.maxLinks) {
            if let context = request.traceContext { span.addLink(SpanLink(context: context, attributes: [:])) }
        }
        span.attributes["reel.commit.dispatches"] = requests.count
    }

    /// Middleware and reducers are done.
    func reduced() {
        if span.isRecording { span.addEvent("reduced") }
    }

    /// Ends the span with the seqs the commit took, or as failed when the writer could not commit.
    func end(seqAfter: UInt64, failure: String?) {
        guard span.isRecording else { return span.end() }
        if seqAfter > seqBefore {
            span.attributes["reel.seq.first"] = Int(seqBefore + 1)
            span.attributes["reel.seq.last"] = Int(seqAfter)
        }
        span.attributes["reel.commit.actions"] = Int(seqAfter - seqBefore)
        if let failure { span.setStatus(SpanStatus(code: .error, message: failure)) }
        span.end()
    }
}
