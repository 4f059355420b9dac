/// What middleware knows about the dispatch it is looking at.
public struct DispatchContext: Sendable {
    /// The sequence number the action will get if it is accepted.
    public var seq: UInt64
    /// The time the store stamps on the action.
    public var time: Timestamp
    /// Who dispatched it.
    public var peer: Peer
    /// What the client said of the action's provenance (logged with it), if anything.
    public var meta: ActionMeta?

    public init(seq: UInt64, time: Timestamp, peer: Peer, meta: ActionMeta? = nil) {
        self.seq = seq
        self.time = time
        self.peer = peer
        self.meta = meta
    }
}

/// Runs before the reducers at dispatch time, never at replay: validation, enrichment (ids, server
/// time, derived fields), authorization. What it returns is what gets logged, so everything impure
/// belongs here and replaying the log needs the reducers only.
public protocol Middleware<State>: Sendable {
    associatedtype State

    /// Inspects, rewrites or refuses an action.
    ///
    /// - Parameters:
    ///   - action: the action as dispatched (or as the previous middleware left it).
    ///   - state: the current state, before this action.
    ///   - context: the seq, time and peer the action will be logged with.
    /// - Returns: the action to reduce and log.
    /// - Throws: ``ReducerError`` to refuse the action; nothing is logged.
    func process(_ action: Action, state: State, context: DispatchContext) throws(ReducerError) -> Action
}

/// Middleware written as a closure.
public struct MiddlewareFunction<State>: Middleware {
    private let body: @Sendable (Action, State, DispatchContext) throws(ReducerError) -> Action

    public init(_ body: @escaping @Sendable (Action, State, DispatchContext) throws(ReducerError) -> Action) {
        self.body = body
    }

    public func process(_ action: Action, state: State, context: DispatchContext) throws(ReducerError) -> Action {
        try body(action, state, context)
    }
}

/// Typed middleware for one action type: decodes the payload, lets `body` rewrite it (enrichment
/// with data only known at dispatch time, validation against the current state), and logs the
/// result. Actions of other types pass through untouched.
public struct Enrich<State, Payload: ActionPayload>: Middleware {
    private let body: @Sendable (Payload, State, DispatchContext) throws(ReducerError) -> Payload

    public init(
        _ payload: Payload.Type,
        _ body: @escaping @Sendable (Payload, State, DispatchContext) throws(ReducerError) -> Payload
    ) {
        self.body = body
    }

    public func process(_ action: Action, state: State, context: DispatchContext) throws(ReducerError) -> Action {
        guard action.type == Payload.actionType else { return action }
        let payload = try Payload.decode(from: action.payload)
        return try Action(try body(payload, state, context))
    }
}
