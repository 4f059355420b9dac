import ReelCore
import ReelJSON
import ReelProtocol

// One typed method per protocol method, all through `call(_:_:resend:)`; plus a raw `call` for
// methods this client does not know.

extension ReelClient {
    /// Calls a method of the protocol with its typed params and reads its typed result.
    ///
    /// ```swift
    /// let page = try await client.call(Method.History.self, HistoryParams(from: 1, limit: 10))
    /// ```
    ///
    /// - Parameters:
    ///   - method: The method, such as `Method.Get.self`.
    ///   - params: Its params.
    ///   - resend: Whether the call may be sent again when the connection drops before its answer;
    ///     by default, as ``ProtocolMethod/isSafeToResend(_:)`` says for the method and params.
    /// - Returns: The result.
    /// - Throws: ``ReelClientError``: the daemon's error (``ReelClientError/serverError``),
    ///   `protocolViolation` for a result that does not fit the method, `connectionLost`, `closed`.
    public func call<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params, resend: ResendPolicy? = nil) async throws(ReelClientError)
        -> M.Result
    {
        let policy = resend ?? (M.isSafeToResend(params) ? .resendAfterReconnect : .failIfConnectionLost)
        let result = try await request(M.name, params.jsonValue, resend: policy)
        return try WireDecoding.decode(M.Result.self, result)
    }

    /// Asks the daemon who it is and what it offers (the client also does this on every
    /// connection; see ``serverHello``).
    ///
    /// - Returns: The daemon's answer.
    /// - Throws: ``ReelClientError``.
    @discardableResult
    public func hello() async throws(ReelClientError) -> ServerHello {
        let hello = try await call(Method.Hello.self, HelloParams(client: configuration.clientName, protocolVersion: WireProtocol.version))
        core.record(hello)
        return hello
    }

    /// Dispatches one action; returns once it is durable.
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - expectedSeq: Accept only if the latest seq is this (optimistic concurrency); otherwise
    ///     the error is ``ReelClientError/Code/serverError`` with ``ReelClientError/rpcCode`` 1003
    ///     and the latest seq in `serverError.data["seq"]`.
    ///   - idempotencyKey: A key (a UUID, or ``makeIdempotencyKey()``) that makes the dispatch safe
    ///     to repeat. With one, a dispatch in flight when the connection drops is sent again after
    ///     reconnecting, and the daemon answers the repeat with the first seq, `duplicate: true`.
    ///     Without one, such a dispatch fails with ``ReelClientError/Code/connectionLost``.
    ///   - meta: Provenance to log with the action: `correlationId`, `causationId`, `source`
    ///     and `traceparent` (strings of at most 256 bytes). Without a `traceparent`, the current
    ///     span's is sent, when there is one (swift-distributed-tracing: `ServiceContext.current`
    ///     propagated by the active instrument in W3C Trace Context form) and the daemon takes
    ///     meta (capability `dispatch.meta`: an older one would refuse the dispatch).
    /// - Returns: The action's seq.
    /// - Throws: ``ReelClientError``: the daemon's refusal (1001 rejected, 1002 unknown type, 1003…;
    ///   -32602 for a bad `meta`), `connectionLost` (outcome unknown), `closed`, or
    ///   `connectionFailed` once reconnecting gave up.
    @discardableResult
    public func dispatch(
        _ action: Action, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil, meta: ActionMeta? = nil
    ) async throws(ReelClientError) -> DispatchReceipt {
        let params = DispatchParams(action: actionToSend(action), expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: metaToSend(meta))
        return DispatchReceipt(try await call(Method.Dispatch.self, params))
    }

    /// Dispatches actions as one atomic batch: all are accepted with consecutive seqs, or none.
    ///
    /// - Parameters:
    ///   - actions: The actions, 1 to 10,000.
    ///   - expectedSeq: Accept only if the latest seq is this; the first action then gets `expectedSeq + 1`.
    ///   - idempotencyKey: A key that makes the batch safe to repeat (see ``dispatch(_:expectedSeq:idempotencyKey:meta:)``).
    ///   - meta: Provenance to log with each action, the current span's `traceparent` filled in
    ///     as for one action.
    /// - Returns: The seqs of the actions, in order.
    /// - Throws: ``ReelClientError``, as for one action; 1007 for more than 10,000 actions.
    @discardableResult
    public func dispatch(
        batch actions: [Action], expectedSeq: UInt64? = nil, idempotencyKey: String? = nil, meta: ActionMeta? = nil
    ) async throws(ReelClientError) -> BatchReceipt {
        let params = DispatchParams(batch: actions.map(actionToSend), expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: metaToSend(meta))
        let outcome = try await call(Method.Dispatch.self, params)
        guard outcome.batch else { throw .violation("a single seq for a batch dispatch") }
        return BatchReceipt(outcome)
    }

    /// The action as a dispatch sends it: a typed payload names its version (``Action/init(_:)``),
    /// which a daemon from before versions would refuse as an unknown member; version 1 is what
    /// such a daemon reads anyway, so it goes unnamed there.
    func actionToSend(_ action: Action) -> Action {
        guard action.version == 1, !serverHello.supports(.dispatchVersion) else { return action }
        var unnamed = action
        unnamed.version = nil
        return unnamed
    }

    /// The meta a dispatch sends: the caller's, with the current span's traceparent when it gives
    /// none and the daemon takes meta.
    func metaToSend(_ meta: ActionMeta?) -> ActionMeta? {
        guard meta?.traceparent == nil, let traceparent = ActionMeta.currentTraceparent(), serverHello.supports(.dispatchMeta) else {
            return meta
        }
        var filled = meta ?? ActionMeta()
        filled.traceparent = traceparent
        return filled
    }

    /// Reads the state or a slice of it, now or as it was at a seq.
    ///
    /// - Parameters:
    ///   - path: The slice; the whole state by default.
    ///   - seq: The seq to read at; the latest by default (which includes every dispatch this
    ///     client had answered before the call).
    /// - Returns: The seq read at and the value there.
    /// - Throws: ``ReelClientError``: 1005 when nothing is at `path`, 1006 for a seq after the latest.
    public func get(_ path: JSONPointer = .root, at seq: UInt64? = nil) async throws(ReelClientError) -> Snapshot<JSONValue> {
        try await call(Method.Get.self, GetParams(path: path, at: seq))
    }

    /// Reads one page of the log, oldest first.
    ///
    /// - Parameters:
    ///   - from: The first seq (inclusive).
    ///   - to: The last seq (inclusive); the latest by default.
    ///   - limit: The most actions in the page, 1 to 10,000.
    ///   - types: Only actions of these types; all by default.
    ///   - correlationId: Only actions whose meta carries this correlation id; all by default.
    /// - Returns: The actions, with `next` set when more match (pass it as `from` for the next page).
    /// - Throws: ``ReelClientError``.
    public func history(
        from: UInt64 = 1, to: UInt64? = nil, limit: Int = HistoryParams.defaultLimit, types: Set<String>? = nil,
        correlationId: String? = nil
    ) async throws(ReelClientError) -> HistoryPage {
        try await call(Method.History.self, HistoryParams(from: from, to: to, limit: limit, types: types, correlationId: correlationId))
    }

    /// What changed between two seqs, as a JSON Patch.
    ///
    /// - Parameters:
    ///   - from: The seq the patch starts from.
    ///   - to: The seq it leads to (may be before `from`: the patch then undoes the changes).
    ///   - path: Compare only this slice. The patch's paths still start at the root of the state,
    ///     unlike the patches of a `patch`-mode subscription.
    /// - Returns: The patch that turns the state at `from` into the state at `to`.
    /// - Throws: ``ReelClientError``: 1005 when the slice exists at neither seq, 1006 for a seq after the latest.
    public func diff(from: UInt64, to: UInt64, path: JSONPointer = .root) async throws(ReelClientError) -> JSONPatch {
        try await call(Method.Diff.self, DiffParams(from: from, to: to, path: path)).patch
    }

    /// What the state would be had some actions never been dispatched. The log is not touched.
    ///
    /// - Parameters:
    ///   - to: Replay up to this seq; the latest by default.
    ///   - skip: The seqs of the actions to leave out.
    ///   - path: The slice of the result to return.
    /// - Returns: The what-if value, and the later actions that no longer applied.
    /// - Throws: ``ReelClientError``: 1005, 1006.
    public func replay(to: UInt64? = nil, skip: Set<UInt64>, path: JSONPointer = .root) async throws(ReelClientError) -> ReplayResult {
        try await call(Method.Replay.self, ReplayParams(to: to, skip: skip, path: path))
    }

    /// The daemon's figures: the data directory's and its counters since it started. Needs the
    /// admin permission.
    ///
    /// - Returns: The figures; ``StatsResult/subscript(name:)`` reads any of them by name.
    /// - Throws: ``ReelClientError``: 1004 without the admin permission.
    public func stats() async throws(ReelClientError) -> StatsResult {
        try await call(Method.Stats.self, StatsParams())
    }

    /// The checkpoints kept beside the log, oldest first, and the reducer the store folds with.
    ///
    /// - Throws: ``ReelClientError``.
    public func checkpoints() async throws(ReelClientError) -> CheckpointList {
        try await call(Method.Checkpoints.self, CheckpointsParams())
    }

    /// Replays `from...through` in the daemon and compares the states with the checkpoints there.
    ///
    /// - Parameters:
    ///   - from: `0`, or the seq of a checkpoint an earlier call verified (to verify in segments).
    ///   - through: The last seq to replay; the latest by default.
    /// - Returns: The checkpoints that matched, those skipped, the actions refused, the first mismatch.
    /// - Throws: ``ReelClientError``: 1006 for a seq after the latest, -32602 for a `from` that is
    ///   not 0 or a checkpoint.
    public func verify(from: UInt64 = 0, through: UInt64? = nil) async throws(ReelClientError) -> VerifyOutcome {
        try await call(Method.Verify.self, VerifyParams(from: from, through: through))
    }

    /// Makes a consistent, compact, owner-only copy of the data directory at `path`, on the
    /// daemon's machine, while it keeps serving. Needs the admin permission.
    ///
    /// - Parameter path: A directory that does not exist or is empty.
    /// - Returns: Where the copy is, its latest seq and its size.
    /// - Throws: ``ReelClientError``: -32602 when `path` is in the way, 1010 when the copy fails.
    ///   Not sent again after a reconnection.
    public func backup(to path: String) async throws(ReelClientError) -> BackupOutcome {
        try await call(Method.Backup.self, BackupParams(path: path))
    }

    /// The first seq at which `condition` holds, found in the daemon in O(log n) states.
    ///
    /// - Parameters:
    ///   - condition: The condition on the state.
    ///   - through: The last seq to consider; the latest by default.
    /// - Returns: The seq (`nil` when the condition does not hold at `through`) and the probes made.
    /// - Throws: ``ReelClientError``: 1006 for a `through` after the latest.
    public func bisect(_ condition: JSONCondition, through: UInt64? = nil) async throws(ReelClientError) -> BisectOutcome {
        try await call(Method.Bisect.self, BisectParams(condition: condition, through: through))
    }

    /// Checks every stored record's checksum in the daemon and lists every damaged one. Needs the
    /// admin permission.
    ///
    /// - Throws: ``ReelClientError``.
    public func scan() async throws(ReelClientError) -> ScanOutcome {
        try await call(Method.Scan.self, ScanParams())
    }

    /// The SHA-256 of the state (or a slice) at a seq: equal digests, equal states, whichever store
    /// they come from, without sending the state.
    ///
    /// - Parameters:
    ///   - path: The slice; the whole state by default.
    ///   - seq: The seq; the latest by default.
    /// - Returns: The seq and the hex SHA-256 of the canonical JSON text `get` would send.
    /// - Throws: ``ReelClientError``: 1005 when nothing is at `path`, 1006 for a seq after the latest.
    public func digest(_ path: JSONPointer = .root, at seq: UInt64? = nil) async throws(ReelClientError) -> DigestResult {
        try await call(Method.Digest.self, DigestParams(path: path, at: seq))
    }

    /// What the store's reducer is and what each action type accepts (its payload's JSON Schema
    /// and an example).
    ///
    /// - Throws: ``ReelClientError``.
    public func describe() async throws(ReelClientError) -> StoreDescription {
        try await call(Method.Describe.self, DescribeParams())
    }

    /// Calls any method by name: for methods added to the daemon after this client was written.
    ///
    /// - Parameters:
    ///   - method: The method name.
    ///   - params: The params object, or `nil` to send none.
    ///   - resend: Whether the call may be sent again when the connection drops before its
    ///     answer: say ``ResendPolicy/resendAfterReconnect`` only for methods that are safe to repeat.
    /// - Returns: The result as it came.
    /// - Throws: ``ReelClientError``.
    public func call(method: String, params: JSONValue? = nil, resend: ResendPolicy = .failIfConnectionLost) async throws(ReelClientError)
        -> JSONValue
    {
        try await core.send(method: method, params: params, kind: .call, policy: resend).get()
    }

    /// A fresh random idempotency key: 128 random bits as 32 hexadecimal digits.
    public static func makeIdempotencyKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(high) + hex(low)
    }
}
