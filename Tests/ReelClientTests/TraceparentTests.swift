import Foundation
import InMemoryTracing
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing
import Tracing

/// A dispatch made inside a span of swift-distributed-tracing carries the span's W3C
/// traceparent in its meta, as the active instrument propagates it; and the daemon logs it, with
/// the client process's executable.
@Suite(.timeLimit(.minutes(1)), .heavy) struct TraceparentTests {
    @Test func aDispatchInsideASpanCarriesItsTraceparent() async throws {
        let tracer = W3CTestTracer()
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                // Bound to this task (`withTracer`), not bootstrapped: other tests in the process
                // keep the no-op instrument.
                let span = try await withTracer(tracer) {
                    try await withSpan("checkout") { span in
                        try await client.dispatch(Stock.set("/n", 1), meta: ActionMeta(correlationId: "order-17"))
                        try await client.dispatch(batch: [Stock.increment(), Stock.increment()])
                        try await client.dispatch(Stock.increment(), meta: ActionMeta(traceparent: Self.given))
                        return try #require(span.context.inMemorySpanContext)
                    }
                }
                // Outside any span: none.
                try await client.dispatch(Stock.increment(), meta: ActionMeta(source: "after"))
                try await client.dispatch(Stock.increment())

                let logged = try await client.history().actions
                #expect(logged.map(\.seq) == [1, 2, 3, 4, 5, 6])
                let traceparent = "00-\(span.traceID)-\(span.spanID)-01"
                #expect(logged[0].meta == ActionMeta(traceparent: traceparent, correlationId: "order-17"))
                #expect(logged[1].meta == ActionMeta(traceparent: traceparent))
                #expect(logged[2].meta == ActionMeta(traceparent: traceparent))
                #expect(logged[3].meta == ActionMeta(traceparent: Self.given), "a traceparent given is kept")
                #expect(logged[4].meta == ActionMeta(source: "after"))
                #expect(logged[5].meta == nil)
                // The trace id the daemon logged is the span's.
                #expect(logged[0].meta?.traceparent?.split(separator: "-")[1] == Substring(span.traceID))

                // The client runs in this process: the daemon read this process's executable.
                let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
                #expect(logged.allSatisfy { $0.peer.exe == exe }, "\(logged.map(\.peer))")
            }
        }
    }

    @Test func anInstrumentWithoutW3CHeadersAddsNothing() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                // The in-memory tracer propagates ids under headers of its own, not `traceparent`.
                _ = try await withTracer(InMemoryTracer()) {
                    try await withSpan("other") { _ in
                        try await client.dispatch(Stock.set("/n", 1))
                    }
                }
                #expect(try await client.history().actions.first?.meta == nil)
            }
        }
    }

    /// A daemon from before meta (no `dispatch.meta` in its capabilities) would refuse a dispatch
    /// with `meta`: the client adds no trace there, and sends what the caller gave.
    @Test func aDaemonWithoutMetaGetsNoTraceFromTheSpan() async throws {
        let dir = try TemporaryDirectory("reel-client-scripted")
        let server = try await ScriptedServer.start(socketPath: dir.sub("s.sock")) { request, _ in
            switch request["method"]?.stringValue {
            case "hello": .send([ScriptedServer.hello(request)])
            case "dispatch": .send([ScriptedServer.result(request, ["seq": 1])])
            default: .close
            }
        }
        try await withReelClient(socketPath: server.socketPath, configuration: .forTests) { client throws in
            _ = try await withTracer(W3CTestTracer()) {
                try await withSpan("checkout") { _ in
                    try await client.dispatch(Stock.increment())
                    try await client.dispatch(Stock.increment(), meta: ActionMeta(correlationId: "c"))
                }
            }
        }
        await server.stop()
        #expect(server.received("dispatch").map { $0.params?["meta"] } == [nil, ["correlationId": "c"]])
    }

    static let given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
}

/// Spans kept in memory, with W3C ids (32 and 16 lowercase hex digits), propagated as W3C Trace
/// Context propagators do (swift-otel's among them): a `traceparent` header,
/// `00-<trace id>-<span id>-<flags>`.
struct W3CTestTracer: Tracer {
    typealias Span = InMemorySpan

    let spans = InMemoryTracer(idGenerator: .init(nextTraceID: { randomHex(bytes: 16) }, nextSpanID: { randomHex(bytes: 8) }))

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        spans.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }
}

/// `bytes` random bytes as lowercase hex (never all zero: W3C ids must not be).
private func randomHex(bytes: Int) -> String {
    var digits = ""
    repeat {
        digits = (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255)
            return String(byte >> 4, radix: 16) + String(byte & 0x0F, radix: 16)
        }.joined()
    } while digits.allSatisfy { $0 == "0" }
    return digits
}
