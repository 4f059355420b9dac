import Logging
import NIOCore
import ReelCore
import ReelFraming
import ReelJSON
import ReelProtocol
import ReelStore
import ServiceLifecycle
import Synchronization

/// One client connection, past its event loop's ``RequestIntake``: runs the requests the intake
/// routed on (queries, subscriptions) concurrently; answers go out in request order, and
/// subscription updates between them (``Outbox``, ``UpdateFeed``). Its tasks run on the
/// connection's event loop (``ConnectionInboxes``), but for the calls that may take long.
struct ServerConnection<State: StoreState>: Sendable {
    let connection: ConnectionInbox.Connection
    let handler: MethodHandler<State>
    let limits: ServerConfiguration.Limits
    let logger: Logger
    let subscriptionIDs: SubscriptionIDs

    var channel: NIOAsyncChannel<RoutedRequest, ByteBuffer> { connection.channel }
    var peer: Peer { connection.peer }

    func run() async {
        let outbox = connection.outbox
        do {
            try await channel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        await withGracefulShutdownHandler {
                            await withTaskGroup(of: Void.self) { requests in
                                await runRequests(inbound, outbox: outbox, requests: &requests)
                            }
                        } onGracefulShutdown: {
                            // Stop reading, keeping the socket whole (see InputGate): what was read
                            // is still answered, then the connection closes.
                            channel.channel.triggerUserOutboundEvent(InputGate.Close(), promise: nil)
                        }
                        outbox.close()
                    }
                    defer { outbox.abort() }
                    outbox.admit()
                    try await ClosingAnswerTask(outbox: outbox, outbound: outbound).run()
                    try await Self.flush(channel.channel)
                    group.cancelAll()
                }
            }
        } catch {
            logger.debug("connection ended: \(error)", metadata: ["pid": "\(peer.pid)"])
        }
    }

    /// Carries out the requests the intake routed here, until the input ends.
    private func runRequests(
        _ inbound: NIOAsyncChannelInboundStream<RoutedRequest>, outbox: Outbox, requests group: inout TaskGroup<Void>
    ) async {
        let handler = self.handler, peer = self.peer
        // The subscriptions to branches, each followed by a task of its own.
        var branchFollowers: [String: Task<Void, Never>] = [:]
        defer { for follower in branchFollowers.values { follower.cancel() } }
        do {
            for try await request in inbound {
                let slot = request.slot
                switch request.route {
                case .answer, .dispatch:
                    preconditionFailure("the intake carries out answers and dispatches itself")
                case .subscribe(let id, let params, let barrier) where params.branch != nil:
                    await Self.settle(barrier)
                    let branch = params.branch!
                    guard branchFollowers.count < limits.maxSubscriptionsPerConnection else {
                        outbox.fill(slot, with: RPCResponse(id: id, error: RPCError(
                            code: RPCError.Code.overloaded, message: "this connection already follows \(branchFollowers.count) branches; unsubscribe some"
                        )).encodedLine())
                        continue
                    }
                    let (bytes, made) = await subscribeToBranch(params, branch: branch, id: id)
                    outbox.fill(slot, with: bytes)
                    if let made {
                        branchFollowers[made.id] = Task {
                            await followBranch(branch, params: params, subscription: made.id, from: made.seq, value: made.value, outbox: outbox)
                        }
                    }
                case .subscribe(let id, let params, let barrier):
                    await Self.settle(barrier)
                    let (bytes, subscription) = await subscribe(params, id: id, outbox: outbox)
                    outbox.fill(slot, with: bytes, activating: subscription)
                case .unsubscribe(let id, let params) where branchFollowers[params.subscription] != nil:
                    branchFollowers.removeValue(forKey: params.subscription)?.cancel()
                    outbox.fill(slot, with: Self.encode(id, .success(UnsubscribeResult())))
                case .unsubscribe(let id, let params):
                    let outcome: Result<any MethodResult, RPCError> = outbox.remove(subscription: params.subscription)
                        ? .success(UnsubscribeResult())
                        : .failure(RPCError(
                            code: RPCError.Code.invalidParams, message: "no subscription '\(params.subscription)' on this connection"
                        ))
                    outbox.fill(slot, with: Self.encode(id, outcome))
                case .call(let id, let call, let barrier):
                    let answer: @Sendable () async -> Void = {
                        await Self.settle(barrier)
                        outbox.fill(slot, with: Self.encode(id, await handler.answer(call, peer: peer)))
                    }
                    // (Two calls, not one with `executorPreference: cond ? nil : …`: a nil
                    // preference passed explicitly started the task on the global executor.)
                    if Self.answersOnItsEventLoop(call) {
                        group.addTask(operation: answer)
                    } else {
                        group.addTask(executorPreference: globalConcurrentExecutor, operation: answer)
                    }
                }
            }
        } catch let error as FramingError {
            guard let slot = await outbox.reserve() else { return }
            outbox.handOverToClosingTask()  // it closes the connection after this answer
            outbox.fill(slot, with: RequestRouter<DispatchTicket>.answer(to: error), close: true)
        } catch {
            logger.debug("read failed: \(error)")
        }
    }
}

extension ServerConnection {
    /// Waits until NIO has handed everything written so far to the kernel.
    ///
    /// `executeThenClose` closes the channel once the connection is done, and a close drops the
    /// writes NIO still holds: the last answers to a peer that reads slowly. An empty write
    /// completes only after every write before it, so waiting for it keeps them. A peer that never
    /// reads would make this wait forever; cancellation (the daemon's shutdown time limit) closes
    /// the channel instead, which ends the wait.
    static func flush(_ channel: any Channel) async throws {
        let flushed = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(ByteBuffer(), promise: flushed)
        try await withTaskCancellationHandler {
            try await flushed.futureResult.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// Whether a call is answered on the connection's event loop, where its tasks run: those with
    /// a small answer made from memory. Every other call leaves the event loop for the
    /// concurrency pool: a `get` of a large state encodes it whole, which would hold up every
    /// connection of the event loop meanwhile (reads that replay go on to the query pool).
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
