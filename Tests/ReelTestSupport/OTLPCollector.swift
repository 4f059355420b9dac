import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A stand-in for an OpenTelemetry collector: accepts OTLP/HTTP posts on 127.0.0.1 and keeps
/// their bodies (the exporter sends JSON when `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json`).
public final class OTLPCollector: Sendable {
    public struct Post: Sendable {
        public var path: String
        public var contentType: String
        public var body: Data
    }

    private final class Posts: Sendable {
        let list = Mutex<[Post]>([])
    }

    private let channel: any Channel
    private let posts: Posts

    /// The port it listens on.
    public var port: Int { channel.localAddress?.port ?? 0 }
    /// Everything posted so far.
    public var received: [Post] { posts.list.withLock { $0 } }

    private init(channel: any Channel, posts: Posts) {
        self.channel = channel
        self.posts = posts
    }

    public static func start() async throws -> OTLPCollector {
        let posts = Posts()
        let keep: @Sendable (Post) -> Void = { post in posts.list.withLock { $0.append(post) } }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(PostHandler(keep: keep))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return OTLPCollector(channel: channel, posts: posts)
    }

    public func stop() async {
        try? await channel.close()
    }
}

/// Keeps each request's body and answers 200 with an empty JSON object, as a collector does.
private final class PostHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let keep: @Sendable (OTLPCollector.Post) -> Void
    private let current = Mutex<(head: HTTPRequestHead, body: Data)?>(nil)

    init(keep: @escaping @Sendable (OTLPCollector.Post) -> Void) {
        self.keep = keep
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            current.withLock { $0 = (head, Data()) }
        case .body(let buffer):
            current.withLock { $0?.body.append(contentsOf: buffer.readableBytesView) }
        case .end:
            guard let (head, body) = current.withLock({ $0 }) else { return }
            keep(OTLPCollector.Post(path: head.uri, contentType: head.headers.first(name: "content-type") ?? "", body: body))
            let answer = ByteBuffer(string: "{}")
            var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(answer.readableBytes)")])
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(answer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
