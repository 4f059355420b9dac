import Logging
import OTel
import ServiceLifecycle
import Tracing

/// The daemon's spans sent to an OpenTelemetry collector over OTLP/HTTP, through swift-otel.
///
/// Made once at start-up when `--otlp-endpoint` is set: the tracer goes to the store (its commit
/// spans) and the server (its dispatch spans), and the service runs beside them, exporting in
/// batches and flushing what is left when the daemon stops. Nothing is bootstrapped globally: a
/// tracer handed down explicitly keeps the default (off) free of any tracing cost, and tests may
/// run several daemons in one process.
///
/// The standard `OTEL_*` environment variables refine what the setting starts (swift-otel reads
/// them): `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (`http/protobuf`, the default, or
/// `http/json`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER` (parent-based, always on, by
/// default: a dispatch whose caller's trace is not sampled is not traced either),
/// `OTEL_BSP_SCHEDULE_DELAY` and the rest.
public struct TraceExport: Sendable {
    /// Starts dispatch and commit spans; what they become is exported by ``service``.
    public let tracer: any Tracer
    /// Exports finished spans in batches; flushes on graceful shutdown.
    public let service: any Service

    /// A tracer exporting to `endpoint`, the collector's base URL (`http://127.0.0.1:4318`: spans
    /// go to its `/v1/traces`).
    public init(endpoint: String, serviceName: String, logger: Logger) throws {
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.diagnosticLogger = .custom(logger)
        // Under load the batch processor drops what its queue cannot hold, and says so at warning
        // level every second it does: a journal flooded for what sampling is the answer to.
        // `OTEL_LOG_LEVEL=warning` brings those lines back.
        configuration.diagnosticLogLevel = .error
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = Self.tracesURL(base: endpoint)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        tracer = backend.factory
        service = backend.service
    }

    /// The URL spans are posted to: the base URL with `v1/traces` appended, as the OTLP
    /// specification asks of `OTEL_EXPORTER_OTLP_ENDPOINT`.
    static func tracesURL(base: String) -> String {
        base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
    }
}
