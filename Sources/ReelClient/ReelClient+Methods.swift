import ReelCore
import ReelJSON
import ReelProtocol

// One typed method per protocol method, plus a raw `call` for methods this client does not know.

extension ReelClient {
    /// Asks the daemon who it is and what it offers (the client also does this on every
    /// connection; see ``serverHello``).
    ///
    /// - Returns: The daemon's answer.
    /// - Throws: ``ReelClientError``.
    @discardableResult
    public func hello() async throws(ReelClientError) -> ServerHello {
        let params = HelloParams(client: configuration.clientName, protocolVersion: WireProtocol.version)
        let hello = try WireDecoding.hello(try await request(.hello, params.jsonValue, resend: .resendAfterReconnect))
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
    /// - Returns: The action's seq.
    /// - Throws: ``ReelClientError``: the daemon's refusal (1001 rejected, 1002 unknown type, 1003…),
    ///   `connectionLost` (outcome unknown), `closed`, or `connectionFailed` once reconnecting gave up.
    @discardableResult
    public func dispatch(_ action: Action, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil) async throws(ReelClientError)
        -> DispatchReceipt
    {
        let params = DispatchParams(action: action, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey)
        let result = try await request(.dispatch, params.jsonValue, resend: Self.resendPolicy(idempotencyKey: idempotencyKey))
        return try WireDecoding.receipt(result)
    }

    /// Dispatches actions as one atomic batch: all are accepted with consecutive seqs, or none.
    ///
    /// - Parameters:
    ///   - actions: The actions, 1 to 10,000.
    ///   - expectedSeq: Accept only if the latest seq is this; the first action then gets `expectedSeq + 1`.
    ///   - idempotencyKey: A key that makes the batch safe to repeat (see ``dispatch(_:expectedSeq:idempotencyKey:)``).
    /// - Returns: The seqs of the actions, in order.
    /// - Throws: ``ReelClientError``, as for one action; 1007 for more than 10,000 actions.
    @discardableResult
    public func dispatch(batch actions: [Action], expectedSeq: UInt64? = nil, idempotencyKey: String? = nil) async throws(ReelClientError)
        -> BatchReceipt
    {
        let params = DispatchParams(batch: actions, expectedSeq: expectedSeq, idempotencyKey: idempotencyKey)
        let result = try await request(.dispatch, params.jsonValue, resend: Self.resendPolicy(idempotencyKey: idempotencyKey))
        return try WireDecoding.batchReceipt(result)
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
        let params = GetParams(path: path, at: seq)
        return try WireDecoding.snapshot(try await request(.get, params.jsonValue, resend: .resendAfterReconnect))
    }

    /// Reads one page of the log, oldest first.
    ///
    /// - Parameters:
    ///   - from: The first seq (inclusive).
    ///   - to: The last seq (inclusive); the latest by default.
    ///   - limit: The most actions in the page, 1 to 10,000.
    ///   - types: Only actions of these types; all by default.
    /// - Returns: The actions, with `next` set when more match (pass it as `from` for the next page).
    /// - Throws: ``ReelClientError``.
    public func history(
        from: UInt64 = 1, to: UInt64? = nil, limit: Int = HistoryParams.defaultLimit, types: Set<String>? = nil
    ) async throws(ReelClientError) -> HistoryPage {
        let params = HistoryParams(from: from, to: to, limit: limit, types: types)
        return try WireDecoding.historyPage(try await request(.history, params.jsonValue, resend: .resendAfterReconnect))
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
        let params = DiffParams(from: from, to: to, path: path)
        let result = try await request(.diff, params.jsonValue, resend: .resendAfterReconnect)
        return try WireDecoding.patch(result["patch"], "a diff result")
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
        let params = ReplayParams(to: to, skip: skip, path: path)
        return try WireDecoding.replay(try await request(.replay, params.jsonValue, resend: .resendAfterReconnect))
    }

    /// The daemon's figures: `seq` and counters of its choosing. Needs the admin permission.
    ///
    /// - Returns: The `stats` result as it came.
    /// - Throws: ``ReelClientError``: 1004 without the admin permission.
    public func stats() async throws(ReelClientError) -> JSONValue {
        try await request(.stats, StatsParams().jsonValue, resend: .resendAfterReconnect)
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

    private static func resendPolicy(idempotencyKey: String?) -> ResendPolicy {
        idempotencyKey == nil ? .failIfConnectionLost : .resendAfterReconnect
    }
}
