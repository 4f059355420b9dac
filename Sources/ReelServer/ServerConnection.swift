import Logging
import NIOCore
import ReelCore
import ReelFraming
import ReelJSON
import ReelProtocol
import ReelStore
import Synchronization

/// What one connection's requests do, past its event loop's ``RequestIntake``: the queries and
/// subscriptions the intake routed on, each carried out in a task of its own
/// (``ConnectionHandler`` starts them); answers go out in request order, and subscription updates
/// between them (``Outbox``, ``UpdateFeed``).
struct ServerConnection<State: StoreState>: Sendable {
    let outbox: Outbox
    let peer: Peer
    let handler: MethodHandler<State>
    let limits: ServerConfiguration.Limits
    let logger: Logger
    let subscriptionIDs: SubscriptionIDs
    /// The subscriptions to branches, each followed by a task of its own.
    let branchFollowers = BranchFollowers()

    /// Carries out one request the intake routed here, and fills its slot.
    func carryOut(_ request: RoutedRequest, tasks: ConnectionTasks, executor: any TaskExecutor) async {
        let slot = request.slot
        switch request.route {
        case .answer, .dispatch:
            preconditionFailure("the intake carries out answers and dispatches itself")
        case .subscribe(let id, let params, let barrier) where params.branch != nil:
            await Self.settle(barrier)
            let branch = params.branch!
            let following = branchFollowers.count
            guard following < limits.maxSubscriptionsPerConnection else {
                outbox.fill(slot, with: RPCResponse(id: id, error: RPCError(
                    code: RPCError.Code.overloaded, message: "this connection already follows \(following) branches; unsubscribe some"
                )).encodedLine())
                return
            }
            let (bytes, made) = await subscribeToBranch(params, branch: branch, id: id)
            outbox.fill(slot, with: bytes)
            if let made {
                let outbox = self.outbox
                let follower = tasks.start(preferring: executor) {
                    await followBranch(branch, params: params, subscription: made.id, from: made.seq, value: made.value, outbox: outbox)
                }
                if let follower { branchFollowers.add(follower, for: made.id) }
            }
        case .subscribe(let id, let params, let barrier):
            await Self.settle(barrier)
            let (bytes, subscription) = await subscribe(params, id: id, outbox: outbox)
            outbox.fill(slot, with: bytes, activating: subscription)
        case .unsubscribe(let id, let params) where branchFollowers.cancel(params.subscription):
            outbox.fill(slot, with: Self.encode(id, .success(UnsubscribeResult())))
        case .unsubscribe(let id, let params):
            let outcome: Result<any MethodResult, RPCError> = outbox.remove(subscription: params.subscription)
                ? .success(UnsubscribeResult())
                : .failure(RPCError(
                    code: RPCError.Code.invalidParams, message: "no subscription '\(params.subscription)' on this connection"
                ))
            outbox.fill(slot, with: Self.encode(id, outcome))
        case .call(let id, let call, let barrier):
            await Self.settle(barrier)
            outbox.fill(slot, with: Self.encode(id, await handler.answer(call, peer: peer)))
        }
    }

    /// No more requests: the branch followers stop, what was read is answered, then the
    /// connection closes.
    func endInput() {
        branchFollowers.cancelAll()
        outbox.close()
    }

    /// The last answer to a peer whose framing failed, after the answers to what it sent before;
    /// the connection closes after it.
    func close(after error: FramingError) async {
        guard let slot = await outbox.reserve() else { return }
        outbox.fill(slot, with: RequestRouter<DispatchTicket>.answer(to: error), close: true)
    }
}

/// A connection's subscriptions to branches, each followed by a task: cancelled by `unsubscribe`,
/// and all of them when the connection's input ends.
final class BranchFollowers: Sendable {
    private let followers = Mutex<[String: Task<Void, Never>]>([:])

    var count: Int { followers.withLock { $0.count } }

    func add(_ follower: Task<Void, Never>, for subscription: String) {
        followers.withLock { $0[subscription] = follower }
    }

    /// Cancels the follower of `subscription`; `false` when there is none.
    func cancel(_ subscription: String) -> Bool {
        guard let follower = followers.withLock({ $0.removeValue(forKey: subscription) }) else { return false }
        follower.cancel()
        return true
    }

    func cancelAll() {
        let all = followers.withLock { followers in
            defer { followers = [:] }
            return Array(followers.values)
        }
        for follower in all { follower.cancel() }
    }
}

extension ServerConnection {
    /// Whether a call is answered on the connection's event loop: those with a small answer made
    /// from memory. Every other call's task runs on the concurrency pool: a `get` of a large state
    /// encodes it whole, which would hold up every connection of the event loop meanwhile (reads
    /// that replay go on to the query pool).
    static func answersOnItsEventLoop(_ call: RPCCall) -> Bool {
        call.is(Method.Hello.self) || call.is(Method.Stats.self) || call.is(Method.Describe.self)
            || call.is(Method.HandOver.self) || call.is(Method.TakeOverProgress.self)
    }

    /// Waits until every ticket has its outcome (whatever it is).
    static func settle(_ tickets: [DispatchTicket]) async {
        for ticket in tickets {
            _ = try? await ticket.result()
        }
    }

    static func encode(_ id: RPCID, _ outcome: Result<any MethodResult, RPCError>) -> [UInt8] {
        AnswerLine.encode(id, outcome)
    }
}

/// Answers as the bytes of one line. Not inside a generic type: code generic over the store's
/// state is not specialized across modules, and every call into it looks its type metadata up at
/// run time — per answer, on the dispatch path.
enum AnswerLine {
    static func encode(_ id: RPCID, _ outcome: Result<any MethodResult, RPCError>) -> [UInt8] {
        switch outcome {
        case .success(let result): success(id, result)
        case .failure(let error): RPCResponse(id: id, error: error).encodedLine()
        }
    }

    private static func success<Result: MethodResult>(_ id: RPCID, _ result: Result) -> [UInt8] {
        RPCSuccess(id: id, result: result).encodedLine()
    }
}

/// Tells a connection's ``Outbox`` when its socket takes writes again, for the answers it holds
/// back meanwhile; the first handler of the pipeline, whose context the outbox writes from.
final class WritabilityRelay: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let outbox: Outbox

    init(outbox: Outbox) { self.outbox = outbox }

    func handlerAdded(context: ChannelHandlerContext) {
        outbox.attach(head: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        outbox.detachHead()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { outbox.socketBecameWritable() }
        context.fireChannelWritabilityChanged()
    }
}

/// Unique subscription ids for the daemon's lifetime.
final class SubscriptionIDs: Sendable {
    private let next = Mutex<UInt64>(0)
    func make() -> String {
        "s\(next.withLock { $0 += 1; return $0 })"
    }
}
