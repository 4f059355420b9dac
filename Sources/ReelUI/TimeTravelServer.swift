import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ReelJSON
import ServiceLifecycle

/// `reel ui`'s web server: the page and its JSON API (``TimeTravelAPI``) on 127.0.0.1, and a
/// WebSocket that tells the page each new latest seq. Hummingbird serves HTTP and the WebSocket.
///
/// Every request needs the token: from the `token` query parameter (the URL `reel ui` prints),
/// an `Authorization: Bearer` header, or the cookie set when the page was loaded with it. Without
/// it the answer is 401, so other local users cannot read the store through the page; what the
/// page can do is what the daemon's access policy lets the user who runs `reel ui` do.
public struct TimeTravelServer: Sendable {
    let backend: any TimeTravelBackend
    let port: Int
    let token: String
    let assets: UIAssets
    let logger: Logger
    /// A report of `APP shadow --json` for the page to show beside the history.
    let shadowReport: JSONValue?

    /// - Parameters:
    ///   - port: The port on 127.0.0.1; 0 picks a free one.
    ///   - token: The secret every request must carry (``makeToken()``).
    ///   - shadowReport: What `APP shadow --json` printed, to show (`reel ui --shadow-report`).
    public init(
        backend: any TimeTravelBackend, port: Int, token: String, assets: UIAssets, logger: Logger, shadowReport: JSONValue? = nil
    ) {
        self.backend = backend
        self.port = port
        self.token = token
        self.assets = assets
        self.logger = logger
        self.shadowReport = shadowReport
    }

    /// 32 random bytes as hex.
    public static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Serves until SIGINT or SIGTERM; `onListening` gets the page's URL (with the token) once
    /// the server accepts connections.
    public func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        // A port taken fails here, as listening would, before any service starts: a service group
        // torn down while its services are still starting (the server failing to bind) can
        // deadlock in the merge of swift-async-algorithms that Hummingbird's date cache runs
        // under (a lock taken in a cancellation handler against the runtime's task locks).
        if port != 0 { try Self.checkFree(port: port) }
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.middlewares.add(TokenCheck(token: token))
        routes(router)
        // The WebSocket's own router checks the token before upgrading. A refused upgrade gets
        // hummingbird-websocket's answer to every upgrade it does not make, 400 and nothing else
        // (not 401: the library writes that answer itself).
        let liveRouter = Router(context: BasicWebSocketRequestContext.self)
        liveRoute(liveRouter)
        let token = self.token
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: liveRouter),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "reel ui"),
            onServerRunning: { channel in
                onListening("http://127.0.0.1:\(channel.localAddress?.port ?? 0)/?token=\(token)")
            },
            logger: logger
        )
        let configuration = ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: ShutdownDeadline(grace: .seconds(1)))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        )
        try await ServiceGroup(configuration: configuration).run()
    }

    /// Throws the `IOError` binding 127.0.0.1:`port` gives, as the server's own bind would (with
    /// `SO_REUSEADDR`, as it binds): `EADDRINUSE` when another program listens there.
    static func checkFree(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return }  // no socket to probe with: the server's bind says
        defer { close(descriptor) }
        var reuse: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound != 0 { throw IOError(errnoCode: errno, reason: "bind") }
    }

    private func routes(_ router: Router<BasicWebSocketRequestContext>) {
        let api = TimeTravelAPI(backend: backend, shadowReport: shadowReport)
        let assets = self.assets
        router.get("/") { _, _ in assets.response(for: "index.html") }
        for name in assets.servedNames {
            router.get(RouterPath("/\(name)")) { _, _ in assets.response(for: name) }
        }
        // A thrown UIError is an HTTPResponseError: Hummingbird answers it with its status.
        router.get("/api/info") { _, _ in JSONBody(try await api.info()) }
        router.get("/api/shadow") { _, _ in JSONBody(try api.shadow()) }
        router.post("/api/call/{method}") { request, context in
            JSONBody(try await api.call(context.parameters.get("method") ?? "", Self.body(request)))
        }
        router.get("/api/history") { request, _ in JSONBody(try await api.history(Self.query(request))) }
        router.get("/api/search") { request, _ in JSONBody(try await api.search(Self.query(request))) }
        router.get("/api/actions") { request, _ in JSONBody(try await api.actions(Self.query(request))) }
        router.get("/api/state") { request, _ in JSONBody(try await api.state(Self.query(request))) }
        router.get("/api/show") { request, _ in JSONBody(try await api.show(Self.query(request))) }
        router.get("/api/diff") { request, _ in JSONBody(try await api.diff(Self.query(request))) }
        router.post("/api/whatif") { request, _ in JSONBody(try await api.whatIf(Self.body(request))) }
        router.post("/api/bisect") { request, _ in JSONBody(try await api.bisect(Self.body(request))) }
        router.post("/api/dispatch") { request, _ in JSONBody(try await api.dispatch(Self.body(request))) }
        router.post("/api/revert") { request, _ in JSONBody(try await api.revert(Self.body(request))) }
        router.get("/api/export") { request, _ in
            let query = Self.query(request)
            let bytes = try await api.export(query)
            let name = "reel-\(query.text("from") ?? "1")-\(query.text("to") ?? "latest").ndjson"
            return Response(
                status: .ok,
                headers: [.contentType: "application/x-ndjson", .contentDisposition: "attachment; filename=\"\(name)\""],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
            )
        }
    }

    private func liveRoute(_ router: Router<BasicWebSocketRequestContext>) {
        let backend = self.backend
        let token = self.token
        router.ws("/api/live") { request, _ in
            TokenCheck<BasicWebSocketRequestContext>.carries(request, token: token) ? .upgrade() : .dontUpgrade
        } onUpgrade: { inbound, outbound, _ in
            // The latest seq now and after each change; the page reads what it needs. Ends when
            // the page goes (its side of the socket closes) or the server shuts down.
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await _ in inbound {}
                    }
                    group.addTask {
                        for await seq in await backend.seqs() {
                            try await outbound.write(.text("{\"seq\":\(seq)}"))
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    private static func query(_ request: Request) -> Query {
        var parameters: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            parameters[String(name)] = String(value)
        }
        return Query(parameters: parameters)
    }

    private static func body(_ request: Request) async throws -> JSONValue {
        let buffer = try await request.body.collect(upTo: 8 << 20)
        let bytes = Array(buffer.readableBytesView)
        guard let value = try? JSONValue(parsing: bytes) else { return .null }
        return value
    }
}

/// Refuses every request without the token (401), and gives the browser a cookie with it when
/// the page is loaded with `?token=`, so the page's own requests carry it.
struct TokenCheck<Context: RequestContext>: RouterMiddleware {
    static var cookieName: String { "reel_ui_token" }
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.carries(request, token: token) else {
            return Response(
                status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "401: open the URL that `reel ui` printed (it carries the token)\n"))
            )
        }
        var response = try await next(request, context)
        if request.uri.queryParameters.get("token") != nil {
            response.setCookie(Cookie(name: Self.cookieName, value: token, path: "/", httpOnly: true, sameSite: .strict))
        }
        return response
    }

    /// Whether the request carries the token: as the `token` query parameter, a bearer token or the cookie.
    static func carries(_ request: Request, token: String) -> Bool {
        let fromQuery = request.uri.queryParameters.get("token")
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let fromCookie = request.cookies[cookieName]?.value
        guard let given = fromQuery ?? bearer ?? fromCookie else { return false }
        return equal(given, token)
    }

    /// Compares in time that does not depend on where the strings differ.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Ends the process if the server has not stopped `grace` after Ctrl-C. The server waits for its
/// connections to finish, and a browser holds some open on which it has sent nothing (Chromium
/// opens them ahead of need) and which neither the graceful shutdown nor cancellation closes:
/// Ctrl-C must stop `reel ui` all the same. Nothing is lost: the page only reads, or dispatches
/// through the daemon, which has answered every request the page saw answered.
struct ShutdownDeadline: Service {
    let grace: Duration

    func run() async throws {
        try? await gracefulShutdown()
        try? await Task.sleep(for: grace)
        guard !Task.isCancelled else { return }
        exit(0)
    }
}
