import CoreMetrics
import NIOPosix
import ReelCore
import ReelJSON
import ReelProtocol
import ReelQuery
import ReelStore
import Tracing

/// Answers the methods that need no connection state: every method but `subscribe` and
/// `unsubscribe`, which live with their connection.
///
/// Reads are answered by ``TimelineQueries`` (each method's `TimelineQuery` conformance), the
/// query layer `reel --data-dir` uses too; only `hello` and `stats` add what the running daemon
/// knows. Reads that rebuild states from the log can take milliseconds of CPU: they run on
/// `queryPool` threads, each on its own read transactions, so neither the writer nor the
/// connections' event loops wait for them; reads of the latest state take the published state in
/// memory, without a pool hop or a read transaction.
public struct MethodHandler<State: StoreState>: Sendable {
    public let store: Store<State>
    public let authorize: Authorizer
    public let serverVersion: String
    let queryPool: NIOThreadPool
    let queries: TimelineQueries<State>

    /// Connections, subscriptions and refusals of the server this handler answers for.
    let figures: ServerFigures
    /// The daemon's side of a take-over, when it allows one.
    let handOver: HandOver?
    /// Starts the spans of dispatches, when the daemon exports traces.
    let tracer: (any Tracer)?

    public init(
        store: Store<State>, queryPool: NIOThreadPool, serverVersion: String, authorize: @escaping Authorizer,
        figures: ServerFigures = ServerFigures(metrics: NOOPMetricsHandler.instance), handOver: HandOver? = nil,
        tracer: (any Tracer)? = nil
    ) {
        self.figures = figures
        self.handOver = handOver
        self.tracer = tracer
        self.store = store
        self.queryPool = queryPool
        self.serverVersion = serverVersion
        self.authorize = authorize
        self.queries = TimelineQueries(store.timeline, latest: { [store] in
            let snapshot = store.snapshot
            return (snapshot.seq, snapshot.state)
        })
    }

    /// The methods of ``Method/all`` that nobody answers: neither a connection (`dispatch`,
    /// `subscribe`, `unsubscribe`) nor the query layer (a `TimelineQuery`). A server refuses to
    /// start while there is one.
    public static var unansweredMethods: [MethodName] {
        Method.all.filter { !($0 is any TimelineQuery.Type) && !$0.actsOnItsConnection && $0.name != Method.Dispatch.name }.map { $0.name }
    }

    /// The result of one call, or the error to answer with: every method but `subscribe` and
    /// `unsubscribe`. (A connection hands dispatches to the store itself, with
    /// ``submit(_:peer:)`` and ``response(to:ticket:)``, to keep the order it read them in.)
    public func answer(_ call: RPCCall, peer: Peer) async -> Result<any MethodResult, RPCError> {
        if let denial = denial(call.method, peer: peer) {
            return .failure(denial)
        }
        do {
            return .success(try await result(of: call.method, call, peer: peer))
        } catch {
            return .failure(error)
        }
    }

    /// The result of any call but a subscription's, as a JSON value: for those who read results
    /// rather than write them (tests, embedding).
    public func handle(_ call: RPCCall, peer: Peer) async -> Result<JSONValue, RPCError> {
        switch await answer(call, peer: peer) {
        case .success(let result): .success(Self.json(result))
        case .failure(let error): .failure(error)
        }
    }

    private static func json(_ result: some MethodResult) -> JSONValue { result.asJSON }

    private func result<M: ProtocolMethod>(of method: M.Type, _ call: RPCCall, peer: Peer) async throws(RPCError) -> any MethodResult {
        let params = call.params(as: method)!
        if let params = params as? DispatchParams {
            if let branch = params.branch {
                // A branch's dispatch: through the branch writer, on the query pool (it waits for
                // its LMDB commit), never through the main history's writer.
                let writer = store.branchWriter
                let result = try await query { () throws(StoreError) in
                    try writer.dispatch(params.actions, toBranch: branch, peer: peer, expectedSeq: params.expectedSeq, meta: params.meta)
                }
                return DispatchOutcome(seqs: result.seqs, batch: params.isBatch)
            }
            return try await response(to: params, ticket: submit(params, peer: peer)).get()
        }
        if call.is(Method.Hello.self) { return hello(peer: peer) }
        if call.is(Method.Stats.self) { return try await stats() }
        if call.is(Method.HandOver.self), let params = params as? HandOverParams { return try handOver(to: params.receiver) }
        if call.is(Method.TakeOverProgress.self), let params = params as? TakeOverProgressReport {
            handOver?.report(params)
            return TakeOverProgressAcknowledgement()
        }
        guard !method.actsOnItsConnection else {
            throw RPCError(code: RPCError.Code.methodNotFound, message: "'\(method.name)' needs a connection")
        }
        let queries = self.queries
        if TimelineQueries<State>.readsOnlyTheLatestState(method, params) {
            return try Self.wire { () throws(StoreError) in try queries.answer(method, params) }
        }
        return try await query { () throws(StoreError) in try queries.answer(method, params) }
    }

    /// `hello`: the store's seq and reducer, what this peer may do, the shared log's standing.
    private func hello(peer: Peer) -> ServerHello {
        let permissions = Permission.allCases.filter { authorize($0, peer) }.map(\.rawValue)
        let seq = store.snapshot.seq
        var hello = ServerHello(version: serverVersion, seq: seq, reducer: store.definition.identity, permissions: permissions)
        hello.sharedLog = store.sharedLogStatus.map { SharedLogReport($0, localSeq: seq) }
        return hello
    }

    /// `handOver`: the listening socket to the new daemon, and this one starts to stop.
    private func handOver(to receiver: String) throws(RPCError) -> HandOverResult {
        guard let handOver else {
            throw RPCError(code: RPCError.Code.invalidParams, message: "this server cannot hand over: it runs without a daemon around it")
        }
        try handOver.handOver(to: receiver)
        return HandOverResult(seq: store.snapshot.seq, watchdogMicroseconds: handOver.watchdogMicroseconds)
    }

    /// `stats`: the data directory's figures, the store's counters and the server's.
    private func stats() async throws(RPCError) -> StatsResult {
        let queries = self.queries
        let statistics = store.statistics
        let server = figures.snapshot()
        let progress = handOver?.progress
        return try await query { () throws(StoreError) in
            var stats = try queries.stats()
            stats.add(statistics)
            stats.add(server)
            stats.takeOver = progress
            return stats
        }
    }

    /// Hands a dispatch to the store now, so that dispatches keep the order they were read in.
    /// The caller has checked the peer's permission (``handle(_:peer:)`` does).
    public func submit(_ params: DispatchParams, peer: Peer) -> DispatchTicket {
        store.submit(
            batch: params.actions, peer: peer, expectedSeq: params.expectedSeq, idempotencyKey: params.idempotencyKey, meta: params.meta
        )
    }

    /// The `dispatch` result (or error) once the submitted actions are durable or refused.
    public func response(to params: DispatchParams, ticket: DispatchTicket) async -> Result<any MethodResult, RPCError> {
        let outcome: DispatchTicket.Outcome
        do {
            outcome = .success(try await ticket.result())
        } catch {
            outcome = .failure(error)
        }
        return Self.response(to: params, outcome: outcome)
    }

    /// The `dispatch` result (or error) for a settled dispatch.
    public static func response(to params: DispatchParams, outcome: DispatchTicket.Outcome) -> Result<any MethodResult, RPCError> {
        switch outcome {
        case .success(let result): .success(DispatchOutcome(seqs: result.seqs, duplicate: result.duplicate, batch: params.isBatch))
        case .failure(let error): .failure(RPCError(error, expectedSeq: params.expectedSeq))
        }
    }

    /// The permission error for a peer that may not call `method`.
    public func denial(_ method: any ProtocolMethod.Type, peer: Peer) -> RPCError? {
        guard !authorize(method.permission, peer) else { return nil }
        return RPCError(
            code: RPCError.Code.permissionDenied,
            message: "uid \(peer.uid) may not use '\(method.name)' on this daemon (see its access policy)"
        )
    }

    /// The value at `path` at `seq` (now when `nil`), or `nil` when nothing is there.
    func slice(at seq: UInt64?, path: JSONPointer) async throws(RPCError) -> (seq: UInt64, value: JSONValue?) {
        let timeline = store.timeline
        guard let seq else {
            let snapshot = store.snapshot
            return (snapshot.seq, try Self.wire { () throws(StoreError) in try snapshot.state.jsonValueOrThrow(seq: snapshot.seq) }.value(at: path))
        }
        let state = try await query { () throws(StoreError) in try timeline.state(at: seq) }
        return (seq, try Self.wire { () throws(StoreError) in try state.jsonValueOrThrow(seq: seq) }.value(at: path))
    }

    /// A branch's whole state at `seq`, read on the query pool: the state the branch writer kept
    /// after its last dispatch there when that is the one asked for (a branch subscription after
    /// each commit), else rebuilt from the checkpoint before the fork.
    func branchState(_ branch: String, at seq: UInt64) async throws(RPCError) -> JSONValue {
        let queries = self.queries
        let writer = store.branchWriter
        return try await query { () throws(StoreError) in
            if let kept = try writer.keptState(of: branch), kept.seq == seq { return try kept.state.jsonValueOrThrow(seq: seq) }
            return try queries.get(GetParams(path: .root, at: seq, branch: branch)).value
        }
    }

    /// A branch's latest seq (cheap: no state is rebuilt).
    func branchLatestSeq(_ branch: String) async throws(RPCError) -> UInt64 {
        let timeline = store.timeline
        return try await query { () throws(StoreError) in try timeline.branch(named: branch).latestSeq() }
    }

    /// A branch's actions `from...to`, at most `limit`, read on the query pool.
    func branchHistory(_ branch: String, from: UInt64, to: UInt64, limit: Int) async throws(RPCError) -> HistoryPage {
        let queries = self.queries
        return try await query { () throws(StoreError) in try queries.history(HistoryParams(from: from, to: to, limit: limit, branch: branch)) }
    }

    /// Logged actions `from...to`, at most `limit`, read on the query pool.
    func history(from: UInt64, to: UInt64, limit: Int) async throws(RPCError) -> HistoryPage {
        let queries = self.queries
        return try await query { () throws(StoreError) in try queries.history(HistoryParams(from: from, to: to, limit: limit)) }
    }

    /// Runs a time-travel query on the query pool.
    private func query<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) async throws(RPCError) -> T {
        let outcome: Result<T, StoreError>
        do {
            outcome = try await queryPool.runIfActive { Result(catching: body) }
        } catch {
            throw RPCError.shuttingDown
        }
        return try Self.wire { () throws(StoreError) in try outcome.get() }
    }

    private static func wire<T>(_ body: () throws(StoreError) -> T) throws(RPCError) -> T {
        do {
            return try body()
        } catch {
            throw RPCError(error)
        }
    }
}

