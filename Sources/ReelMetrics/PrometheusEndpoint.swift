#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// Serves a Prometheus registry in the text exposition format at `GET /metrics`, over TCP or a
/// Unix socket, with SwiftNIO's HTTP/1.1 server pipeline. Every other path is answered 404, every
/// other method 405.
///
/// Listening starts with ``listen(on:registry:logger:beforeScrape:)`` (so that a daemon can refuse
/// to start when the address is taken); as a `Service`, it serves from then until graceful
/// shutdown. Figures that are read rather than counted (connections, lag, map use) are brought up
/// to date by `beforeScrape`, right before each scrape renders the registry.
public struct PrometheusEndpoint: Service {
    let address: MetricsAddress
    let channel: any Channel
    let logger: Logger
    /// What a scraper asks for: `http://127.0.0.1:9464/metrics` (with the port chosen when 0 was
    /// asked), or `unix:PATH /metrics`.
    public let url: String

    /// Binds the address and starts answering scrapes.
    ///
    /// - Throws: NIO's error when the address cannot be bound (in use, not local, not permitted).
    public static func listen(
        on address: MetricsAddress, registry: PrometheusCollectorRegistry, logger: Logger,
        beforeScrape: @escaping @Sendable () -> Void = {}
    ) async throws -> PrometheusEndpoint {
        let channel = try await bind(address, registry: registry, beforeScrape: beforeScrape)
        let url = switch address {
        case .tcp(let host, _): "http://\(MetricsAddress.tcp(host: host, port: channel.localAddress?.port ?? 0))/metrics"
        case .unix(let path): "unix:\(path) /metrics"
        }
        logger.info("serving metrics", metadata: ["url": "\(url)"])
        return PrometheusEndpoint(address: address, channel: channel, logger: logger, url: url)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try? await channel.close()
        if case .unix(let path) = address { unlink(path) }
    }

    private static func bind(
        _ address: MetricsAddress, registry: PrometheusCollectorRegistry, beforeScrape: @escaping @Sendable () -> Void
    ) async throws -> any Channel {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(ScrapeHandler(registry: registry, beforeScrape: beforeScrape))
                }
            }
        switch address {
        case .tcp(let host, let port):
            return try await bootstrap.bind(host: host, port: port).get()
        case .unix(let path):
            // A socket left by a daemon that did not stop cleanly; never anything else.
            var status = stat()
            if lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
            return try await bootstrap.bind(unixDomainSocketPath: path).get()
        }
    }
}

/// Answers one HTTP request at a time with the registry's text (one per connection, on its event loop).
final class ScrapeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry
    let beforeScrape: @Sendable () -> Void
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry, beforeScrape: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.beforeScrape = beforeScrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let status: HTTPResponseStatus
        var body: [UInt8]
        var headers = HTTPHeaders()
        if path != "/metrics" {
            status = .notFound
            body = Array("not found: the metrics are at /metrics\n".utf8)
        } else if head.method != .GET && head.method != .HEAD {
            status = .methodNotAllowed
            body = Array("only GET and HEAD\n".utf8)
            headers.add(name: "Allow", value: "GET, HEAD")
        } else {
            status = .ok
            beforeScrape()
            body = []
            registry.emit(into: &body)
            headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        }
        if status != .ok { headers.add(name: "Content-Type", value: "text/plain; charset=utf-8") }
        headers.add(name: "Content-Length", value: "\(body.count)")
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
