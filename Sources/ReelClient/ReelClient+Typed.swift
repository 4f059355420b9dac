import ReelCore
import ReelJSON
import ReelProtocol

// Helpers for apps with their own Swift types: actions as `ActionPayload` values, the state (or a
// slice) as any `Decodable`.

extension ReelClient {
    /// Dispatches a typed action: its type is `Payload.actionType`, its payload the value as JSON.
    ///
    /// ```swift
    /// struct AddTodo: ActionPayload {
    ///     static let actionType = "todos/add"
    ///     var title: String
    /// }
    /// try await client.dispatch(AddTodo(title: "milk"), idempotencyKey: ReelClient.makeIdempotencyKey())
    /// ```
    ///
    /// - Parameters:
    ///   - payload: The action's payload.
    ///   - expectedSeq: Accept only if the latest seq is this.
    ///   - idempotencyKey: A key that makes the dispatch safe to repeat.
    ///   - meta: Provenance to log with the action (see ``dispatch(_:expectedSeq:idempotencyKey:meta:)``).
    /// - Returns: The action's seq.
    /// - Throws: ``ReelClientError/Code/encodingFailed`` when the payload has no JSON form;
    ///   otherwise as ``dispatch(_:expectedSeq:idempotencyKey:meta:)``.
    @discardableResult
    public func dispatch<Payload: ActionPayload>(
        _ payload: Payload, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil, meta: ActionMeta? = nil
    ) async throws(ReelClientError) -> DispatchReceipt {
        try await dispatch(try Self.action(payload), expectedSeq: expectedSeq, idempotencyKey: idempotencyKey, meta: meta)
    }

    /// Reads the state, or a slice of it, as a Swift type.
    ///
    /// - Parameters:
    ///   - type: The type to decode, such as the app's state struct.
    ///   - path: The slice; the whole state by default.
    ///   - seq: The seq to read at; the latest by default.
    /// - Returns: The seq read at and the decoded value.
    /// - Throws: ``ReelClientError/Code/decodingFailed`` when the JSON does not fit `type`;
    ///   otherwise as ``get(_:at:)``.
    public func get<Value: Decodable>(_ type: Value.Type, path: JSONPointer = .root, at seq: UInt64? = nil) async throws(
        ReelClientError
    ) -> Snapshot<Value> {
        let snapshot = try await get(path, at: seq)
        return Snapshot(seq: snapshot.seq, value: try Self.decode(type, from: snapshot.value, path: path, seq: snapshot.seq))
    }

    /// Follows the state, or a slice, as a Swift type: the current value first, then the value
    /// after each change, each with its seq.
    ///
    /// ```swift
    /// for try await state in try await client.states(AppState.self) {
    ///     render(state.value)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type to decode each value as.
    ///   - path: The slice; the whole state by default.
    ///   - mode: How the daemon sends changes: `patch` (less to send for a large state that
    ///     changes a little, the default) or `value` (a slow reader skips straight to the newest).
    /// - Returns: The stream; it resumes across reconnections like any subscription.
    /// - Throws: ``ReelClientError``, as ``subscribe(_:mode:since:)``. A value that does not decode
    ///   is thrown from the stream as ``ReelClientError/Code/decodingFailed``.
    public func states<Value: Decodable & Sendable>(
        _ type: Value.Type, path: JSONPointer = .root, mode: StateStream<Value>.Mode = .patch
    ) async throws(ReelClientError) -> StateStream<Value> {
        StateStream(subscription: try await subscribe(path, mode: mode.subscriptionMode))
    }

    static func action<Payload: ActionPayload>(_ payload: Payload) throws(ReelClientError) -> Action {
        do {
            return try Action(payload)
        } catch {
            throw ReelClientError(.encodingFailed, error.message, underlying: error)
        }
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from json: JSONValue, path: JSONPointer, seq: UInt64) throws(
        ReelClientError
    ) -> Value {
        do {
            return try JSONValueDecoder().decode(type, from: json)
        } catch {
            let place = path.isRoot ? "the state" : "the value at \(path)"
            throw ReelClientError(
                .decodingFailed, "\(place) at seq \(seq) does not decode as \(Value.self): \(error.message)", underlying: error)
        }
    }
}
