import ReelJSON
import ReelProtocol

/// Everything a client keeps track of — the connection's phase, the requests waiting for an
/// answer, the subscriptions — as a plain value that returns what to do instead of doing it.
///
/// It does no I/O and holds no continuation: ``ClientCore`` keeps it behind a mutex and carries out
/// the ``Output``s (answering a caller, delivering an update, writing lines) after releasing the
/// lock. That keeps every rule about drops, resends and resumption in one place, testable without
/// a socket.
///
/// Connections are numbered (their *generation*). Every event names the generation it happened
/// on, and an event of a connection that is no longer the current one changes nothing: a late
/// answer or update from a dead channel can never be mistaken for one of its successor.
struct ClientStateMachine {
    private(set) var phase: Phase = .disconnected
    /// The last `hello` answer.
    private(set) var hello: ServerHello?
    private(set) var requests: [Int64: Request] = [:]
    private(set) var subscriptions: [Int: Subscription] = [:]
    /// The daemon's subscription ids on the current connection → local subscriptions.
    var routes: [String: Int] = [:]
    /// The shared feeds' names on the current connection, to the local subscription taking each.
    var feedRoutes: [String: Int] = [:]
    /// Why the client was closed; `nil` when its owner closed it.
    private var closeReason: ReelClientError?
    /// Why the current connection is going down, noted by the channel before it closes.
    private var dropReason: String?
    /// The daemon's 1007 for a request line over its limit, noted before it closes the connection.
    private var lineRefusal: RPCError?
    private var nextRequestID: Int64 = 1
    private var nextSubscriptionID = 1
    private var nextGeneration: UInt64 = 1

    /// The error requests get once the client is closed.
    var closedError: ReelClientError { closeReason ?? .closedByOwner }

    /// The connection that is up now, greeted or not.
    var currentGeneration: UInt64? {
        switch phase {
        case .handshaking(let generation), .ready(let generation): generation
        case .disconnected, .closed: nil
        }
    }

    mutating func makeRequestID() -> Int64 {
        defer { nextRequestID += 1 }
        return nextRequestID
    }

    /// Keeps the answer of an app's own `hello` as the latest.
    mutating func recordHello(_ hello: ServerHello) {
        self.hello = hello
    }

    mutating func makeGeneration() -> UInt64 {
        defer { nextGeneration += 1 }
        return nextGeneration
    }

    // MARK: - Requests

    /// Takes a request: writes it now when the connection is ready, or keeps it until one is.
    ///
    /// - Parameter isCancelled: Whether the caller's task is already cancelled.
    mutating func submit(
        id: Int64, method: String, line: [UInt8], kind: RequestKind, policy: ResendPolicy, isCancelled: Bool
    ) -> [Output] {
        if phase == .closed { return refuse(id, kind: kind, closedError) }
        if isCancelled { return refuse(id, kind: kind, .cancelledBeforeSending) }
        var request = Request(method: method, line: line, kind: kind, policy: policy)
        var outputs: [Output] = []
        switch (kind, phase) {
        case (.handshake(let wanted), .handshaking(let generation)) where wanted == generation:
            request.sentOn = generation
            outputs.append(.write(generation: generation, lines: [line]))
        case (.handshake, _):
            return refuse(id, kind: kind, ReelClientError(.connectionFailed, "the connection closed before the hello handshake"))
        case (_, .ready(let generation)):
            request.sentOn = generation
            outputs.append(.write(generation: generation, lines: [line]))
        default:
            break  // waits for the next connection's handshake
        }
        requests[id] = request
        return outputs
    }

    /// The caller of request `id` was cancelled. A request not yet written is dropped and fails;
    /// one already written keeps waiting for its answer (a dispatch's outcome must not be hidden).
    mutating func cancelRequest(id: Int64) -> [Output] {
        guard var request = requests[id] else { return [] }
        switch request.kind {
        case .call, .subscribe: break
        case .handshake, .resubscribe, .unsubscribe: return []
        }
        guard request.sentOn == nil else {
            request.cancelled = true
            requests[id] = request
            return []
        }
        requests[id] = nil
        return refuse(id, kind: request.kind, .cancelledBeforeSending)
    }

    /// Answers a request that will not be sent; a `subscribe`'s subscription goes with it.
    private mutating func refuse(_ id: Int64, kind: RequestKind, _ error: ReelClientError) -> [Output] {
        var outputs: [Output] = []
        if case .subscribe(let local) = kind, subscriptions.removeValue(forKey: local) != nil {
            outputs.append(.finish(subscription: local, nil))
        }
        outputs.append(.answer(id: id, .failure(error)))
        return outputs
    }

    /// An answer from the daemon on connection `generation`.
    mutating func received(_ response: RPCResponse, generation: UInt64) -> [Output] {
        guard case .int(let id)? = response.id, let request = requests[id], request.sentOn == generation else {
            return []  // not ours, or answered already (a cancelled caller's late answer)
        }
        // 1009: the daemon is stopping and did not carry the request out, whatever it was. Send it
        // again once a daemon is back; the connection is about to close.
        if case .failure(let error) = response.outcome, error.code == RPCError.Code.shuttingDown {
            switch request.kind {
            case .call, .subscribe:
                if !request.cancelled {
                    requests[id]?.sentOn = nil
                    return []
                }
            case .resubscribe, .unsubscribe:
                requests[id] = nil  // the next handshake resubscribes; a closing connection unsubscribes
                return []
            case .handshake:
                break
            }
        }
        requests[id] = nil
        let outcome = response.outcome.mapError { ReelClientError.server($0, method: request.method) }
        switch request.kind {
        case .call, .handshake:
            return [.answer(id: id, outcome)]
        case .unsubscribe:
            return []
        case .subscribe(let local):
            return subscribed(local, answering: id, outcome, generation: generation)
        case .resubscribe(let local):
            return resubscribed(local, outcome, generation: generation)
        }
    }

    // MARK: - Connection

    /// A connection is open; its `hello` is next. Returns `false` when the client closed meanwhile.
    mutating func connectionOpened(generation: UInt64) -> Bool {
        guard phase == .disconnected else { return false }
        phase = .handshaking(generation: generation)
        dropReason = nil
        return true
    }

    /// Notes why connection `generation` is about to close, for the errors of what it drops.
    mutating func noteProblem(_ reason: String, generation: UInt64) {
        guard currentGeneration == generation, dropReason == nil else { return }
        dropReason = reason
    }

    /// The daemon refused a line over its limit (1007, `data.limit`) and is closing the
    /// connection. The line's id is unknown to it, but not to the client: the request whose line is
    /// over the limit gets the refusal as its answer when the connection goes (it was not carried
    /// out, unlike what a lost connection leaves open).
    mutating func noteLineRefused(_ error: RPCError, generation: UInt64) {
        guard currentGeneration == generation, dropReason == nil else { return }
        dropReason = "the daemon sent error \(error.code): \(error.message)"
        lineRefusal = error
    }

    /// The daemon answered `hello`: resume every subscription from the last seq it delivered, then
    /// send every request that waited, oldest first. Returns `nil` when the connection is no
    /// longer the current one.
    mutating func handshakeSucceeded(generation: UInt64, hello: ServerHello) -> [Output]? {
        guard phase == .handshaking(generation: generation) else { return nil }
        phase = .ready(generation: generation)
        self.hello = hello
        var lines: [[UInt8]] = []
        for (local, subscription) in subscriptions.sorted(by: { $0.key < $1.key }) {
            guard let lastSeq = subscription.lastSeq, subscription.serverID == nil else { continue }
            let id = makeRequestID()
            let params = SubscribeParams(
                path: subscription.path, since: lastSeq, mode: subscription.mode, branch: subscription.branch, shared: subscription.shared
            )
            let line = RPCRequest(id: .int(id), method: Method.Subscribe.name.rawValue, params: params.jsonValue).encodedLine()
            requests[id] = Request(
                method: Method.Subscribe.name.rawValue, line: line, kind: .resubscribe(local), policy: .resendAfterReconnect,
                sentOn: generation
            )
            lines.append(line)
        }
        for id in requests.keys.sorted() where requests[id]?.sentOn == nil {
            requests[id]?.sentOn = generation
            if let line = requests[id]?.line { lines.append(line) }
        }
        return lines.isEmpty ? [] : [.write(generation: generation, lines: lines)]
    }

    /// Connection `generation` is gone. Requests written to it are sent again on the next one when
    /// that is safe, and fail with "outcome unknown" when it is not; subscriptions wait to resume.
    mutating func connectionLost(generation: UInt64, reason fallback: String) -> [Output] {
        guard currentGeneration == generation else { return [] }
        let reason = dropReason ?? fallback
        phase = .disconnected
        dropReason = nil
        routes = [:]
        feedRoutes = [:]
        for local in subscriptions.keys {
            subscriptions[local]?.serverID = nil
            subscriptions[local]?.feed = nil
        }
        var outputs: [Output] = []
        if let refusal = lineRefusal.take() {
            outputs += answerOversizedRequest(refusal, generation: generation)
        }
        for id in requests.keys.sorted() {
            guard let request = requests[id], request.sentOn == generation else { continue }
            switch request.kind {
            case .handshake:
                requests[id] = nil
                outputs.append(.answer(id: id, .failure(ReelClientError(
                    .connectionFailed, "the connection closed during the hello handshake (\(reason))"))))
            case .resubscribe, .unsubscribe:
                requests[id] = nil  // the daemon dropped the connection's subscriptions with it
            case .call, .subscribe:
                if request.policy == .failIfConnectionLost {
                    requests[id] = nil
                    outputs += refuse(id, kind: request.kind, .outcomeUnknown(method: request.method, reason: reason))
                } else if request.cancelled {
                    requests[id] = nil
                    outputs += refuse(id, kind: request.kind, ReelClientError(
                        .cancelled, "the calling task was cancelled and the connection dropped (\(reason)); the request was not sent again"))
                } else {
                    requests[id]?.sentOn = nil
                }
            }
        }
        return outputs
    }

    /// Answers the first request written to `generation` whose line is over the limit the daemon's
    /// 1007 names: the daemon answers in order, so it is the one the daemon was reading.
    private mutating func answerOversizedRequest(_ refusal: RPCError, generation: UInt64) -> [Output] {
        guard case .int(let limit)? = refusal.data?["limit"] else { return [] }
        let oversized = requests.keys.sorted().first { id in
            guard let request = requests[id], request.sentOn == generation else { return false }
            return Int64(request.line.count - 1) > limit  // the newline does not count
        }
        guard let id = oversized, let request = requests.removeValue(forKey: id) else { return [] }
        let bytes = request.line.count - 1
        let error = RPCError(
            code: refusal.code,
            message: "the request is \(bytes) bytes, over the daemon's limit of \(limit) bytes per request line; nothing was carried out",
            data: ["limit": .int(limit), "bytes": .int(Int64(bytes))]
        )
        return refuse(id, kind: request.kind, .server(error, method: request.method))
    }

    /// Closes the client: every waiting caller fails, every subscription ends (normally when the
    /// owner closed, with `reason` when reconnecting gave up).
    mutating func close(reason: ReelClientError?) -> [Output] {
        guard phase != .closed else { return [] }
        phase = .closed
        closeReason = reason
        let error = closedError
        var outputs: [Output] = []
        for id in requests.keys.sorted() {
            switch requests[id]?.kind {
            case .call?, .subscribe?, .handshake?: outputs.append(.answer(id: id, .failure(error)))
            default: break
            }
        }
        requests = [:]
        for local in subscriptions.keys.sorted() {
            outputs.append(.finish(subscription: local, reason))
        }
        subscriptions = [:]
        routes = [:]
        feedRoutes = [:]
        return outputs
    }

    // MARK: - Subscriptions (bookkeeping used by ClientStateMachine+Subscriptions)

    mutating func makeSubscription(path: JSONPointer, mode: SubscriptionMode, branch: String? = nil, shared: Bool = false) -> Int {
        let local = nextSubscriptionID
        nextSubscriptionID += 1
        subscriptions[local] = Subscription(path: path, mode: mode, branch: branch, shared: shared)
        return local
    }

    mutating func setSubscription(_ local: Int, _ subscription: Subscription?) {
        subscriptions[local] = subscription
    }

    /// An `unsubscribe` for the daemon's subscription `serverID` on connection `generation`,
    /// answered to no one: the local side has already ended.
    mutating func unsubscribe(serverID: String, generation: UInt64) -> [Output] {
        guard currentGeneration == generation else { return [] }
        let id = makeRequestID()
        let params = UnsubscribeParams(subscription: serverID)
        let line = RPCRequest(id: .int(id), method: Method.Unsubscribe.name.rawValue, params: params.jsonValue).encodedLine()
        requests[id] = Request(
            method: Method.Unsubscribe.name.rawValue, line: line, kind: .unsubscribe, policy: .failIfConnectionLost, sentOn: generation
        )
        return [.write(generation: generation, lines: [line])]
    }
}
