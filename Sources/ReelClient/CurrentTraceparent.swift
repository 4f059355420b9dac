import Instrumentation
import ReelCore

// Dispatches made inside a traced operation carry its trace: when the caller gives no
// `traceparent`, the client asks the active instrument of swift-distributed-tracing (the one
// bootstrapped with `InstrumentationSystem.bootstrap`, or bound with `withTracer`) to write the
// current service context as W3C Trace Context headers, as it would for an outgoing HTTP request,
// and takes its `traceparent` (`ReelClient.metaToSend`). No span, no instrument, or an
// instrument that writes no W3C traceparent: no trace in the meta.

extension ActionMeta {
    /// The W3C `traceparent` of the current span, as the active instrument propagates it; `nil`
    /// without a current service context or a well-formed traceparent.
    static func currentTraceparent() -> String? {
        guard let context = ServiceContext.current else { return nil }
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: HeaderInjector())
        guard let traceparent = headers["traceparent"], isTraceparent(traceparent) else { return nil }
        return traceparent
    }
}

/// Collects what an instrument injects, as headers with lowercase names.
private struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}
