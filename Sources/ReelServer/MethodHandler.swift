import NIOPosix
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// Answers the methods that need no connection state: `hello`, `dispatch`, `get`, `history`,
/// `diff`, `replay`, `stats`. (Subscriptions live with their connection.)
///
/// Time-travel queries rebuild states from the log, which can take milliseconds of CPU: they run
/// on `queryPool` threads, each on its own read transactions, so neither the writer nor the
/// connections' event loops wait for them.
public struct MethodHandler<State: StoreState>: Sendable {
    public let store: Store<State>
    public let authorize: Authorizer
    public let serverVersion: String
    let queryPool: NIOThreadPool

    public init(store: Store<State>, queryPool: NIOThreadPool, serverVersion: String, authorize: @escaping Authorizer) {
        self.store = store
        self.queryPool = queryPool
        self.serverVersion = serverVersion
        self.authorize = authorize
    }

    /// The result of one call, or the error to answer with.
    public func handle(_ call: RPCCall, peer: Peer) async -> Result<JSONValue, RPCError> {
        if let denial = denial(call.method, peer: peer) {
            return .failure(denial)
        }
        do {
            return .success(try await result(of: call, peer: peer))
        } catch {
            return .failure(error)
        }
    }

    private func result(of call: RPCCall, peer: Peer) async throws(RPCError) -> JSONValue {
        let timeline = store.timeline
        switch call {
        case .hello:
            return RPCResult.hello(version: serverVersion, seq: store.snapshot.seq, reducer: store.definition.identity)
        case .dispatch(let params):
            return try await dispatch(params, peer: peer)
        case .get(let params):
            guard let at = params.at else {
                let snapshot = store.snapshot
                return RPCResult.get(seq: snapshot.seq, value: try Self.wire { () throws(StoreError) in
                    try Timeline<State>.slice(snapshot.state, path: params.path, seq: snapshot.seq)
                })
            }
            let value = try await query { () throws(StoreError) in try timeline.value(at: at, path: params.path) }
            return RPCResult.get(seq: at, value: value)
        case .history(let params):
            let page = try await query { () throws(StoreError) in
                try timeline.history(from: params.from, to: params.to, limit: params.limit, types: params.types)
            }
            return RPCResult.history(actions: page.actions, next: page.next)
        case .diff(let params):
            let patch = try await query { () throws(StoreError) in
                try timeline.diff(from: params.from, to: params.to, path: params.path)
            }
            return RPCResult.diff(patch: patch)
        case .replay(let params):
            let whatIf = try await query { () throws(StoreError) in
                let to: UInt64
                if let requested = params.to { to = requested } else { to = try timeline.latestSeq() }
                return try timeline.replay(to: to, skipping: params.skip, path: params.path)
            }
            return RPCResult.replay(value: whatIf.value, refused: whatIf.refused)
        case .stats:
            return RPCResult.stats(seq: store.snapshot.seq, figures: Self.figures(store.statistics, store: store))
        case .checkpoints:
            return try await query { () throws(StoreError) in try Self.checkpoints(timeline) }
        case .verify(let params):
            return try await query { () throws(StoreError) in try Self.verify(params, timeline: timeline) }
        case .backup(let params):
            return try await query { () throws(StoreError) in try Self.backup(params, directory: timeline.directory) }
        case .scan:
            return try await query { () throws(StoreError) in try Self.scan(timeline.directory) }
        case .bisect(let params):
            return try await query { () throws(StoreError) in
                let result = try timeline.bisect(through: params.through) { params.condition.holds(in: $0) }
                return BisectOutcome(seq: result.seq, through: result.through, probes: result.probes).jsonValue
            }
        case .subscribe, .unsubscribe:
            // The connection handles these itself; reaching here is a wiring mistake, not the peer's.
            throw RPCError(code: RPCError.Code.methodNotFound, message: "'\(call.method.rawValue)' needs a connection")
        }
    }

    private func dispatch(_ params: DispatchParams, peer: Peer) async throws(RPCError) -> JSONValue {
        try await response(to: params, ticket: submit(params, peer: peer)).get()
    }

    /// Hands a dispatch to the store now, so that dispatches keep the order they were read in.
    /// The caller has checked the peer's permission (``handle(_:peer:)`` does).
    public func submit(_ params: DispatchParams, peer: Peer) -> DispatchTicket {
        store.submit(batch: params.actions, peer: peer, expectedSeq: params.expectedSeq, idempotencyKey: params.idempotencyKey)
    }

    /// The `dispatch` result (or error) once the submitted actions are durable or refused.
    public func response(to params: DispatchParams, ticket: DispatchTicket) async -> Result<JSONValue, RPCError> {
        let result: DispatchResult
        do {
            result = try await ticket.result()
        } catch {
            return .failure(Self.rpcError(error, expectedSeq: params.expectedSeq))
        }
        guard params.isBatch else { return .success(RPCResult.dispatch(seq: result.seq, duplicate: result.duplicate)) }
        return .success(RPCResult.dispatch(seqs: result.seqs, duplicate: result.duplicate, batch: true))
    }

    /// The permission error for a peer that may not call `method`.
    public func denial(_ method: MethodName, peer: Peer) -> RPCError? {
        guard !authorize(Permission(for: method), peer) else { return nil }
        return RPCError(
            code: RPCError.Code.permissionDenied,
            message: "uid \(peer.uid) may not use '\(method.rawValue)' on this daemon (see its access policy)"
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

    /// Logged actions `from...to`, at most `limit`, read on the query pool.
    func history(from: UInt64, to: UInt64, limit: Int) async throws(RPCError) -> HistoryPage {
        let timeline = store.timeline
        return try await query { () throws(StoreError) in try timeline.history(from: from, to: to, limit: limit) }
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
            throw rpcError(error, expectedSeq: nil)
        }
    }

    /// The protocol error for a store error: same code, same message; a stale `expectedSeq` also
    /// carries the current seq.
    static func rpcError(_ error: StoreError, expectedSeq: UInt64?) -> RPCError {
        if error.code == .seqMismatch, let expectedSeq, let current = error.currentSeq {
            return .seqMismatch(expected: expectedSeq, current: current)
        }
        return RPCError(code: error.code.wireCode, message: error.message)
    }

    static func figures(_ statistics: StoreStatistics, store: Store<State>) -> [String: JSONValue] {
        func number(_ value: UInt64) -> JSONValue { .int(Int64(clamping: value)) }
        var figures: [String: JSONValue] = [
            "commits": number(statistics.commits),
            "actionsCommitted": number(statistics.actionsCommitted),
            "largestCommit": .int(Int64(statistics.largestCommit)),
            "dispatchesRefused": number(statistics.dispatchesRefused),
            "duplicates": number(statistics.duplicates),
            "commitFailures": number(statistics.commitFailures),
            "checkpointsWritten": number(statistics.checkpointsWritten),
            "lastCheckpointSeq": number(statistics.lastCheckpointSeq),
            "replayedAtOpen": .int(Int64(statistics.replayedAtOpen)),
            "mapSize": .int(Int64(store.directory.mapSize)),
        ]
        if let restored = statistics.restoredFromCheckpoint { figures["restoredFromCheckpoint"] = number(restored) }
        return figures
    }
}
