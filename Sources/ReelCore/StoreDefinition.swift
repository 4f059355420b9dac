import ReelJSON

/// Names a reducer and its version. Checkpoints are stamped with it: a checkpoint made by another
/// version is not trusted, and the store rebuilds the state by replaying instead.
public struct ReducerIdentity: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var version: String

    public init(name: String, version: String) {
        self.name = name
        self.version = version
    }

    public var description: String { "\(name)@\(version)" }
}

/// Everything a store needs to know about the application: its identity, the initial state, the
/// middleware that runs at dispatch and the reducers that fold actions into state.
public struct StoreDefinition<State: StoreState>: Sendable {
    public var identity: ReducerIdentity
    public var initialState: State
    public var middleware: [any Middleware<State>]
    public var reducer: any Reducer<State> {
        didSet {
            versions = ActionVersions(reducer.actionDescriptions)
            fewActionTypes = Self.few(reducer.actionTypes)
            // They spoke for the reducer replaced.
            predictChanges = nil
            applyRecordingChanges = nil
            applyPrepared = nil
            applyPreparedRecordingChanges = nil
        }
    }
    /// The versions of the action types and the upcasters between them, from the reducers'
    /// descriptions.
    public private(set) var versions: ActionVersions
    /// The reducers' action types as a list when there are few of them (compared name by name at
    /// every dispatch: hashing the type for the set's lookup was 0.7% of `reeld` at 50 x 16);
    /// `nil` for many, looked up in the set.
    private var fewActionTypes: [String]?
    /// What an action will change in the state, worked out before it is applied (see
    /// ``JSONDocumentReducer/predictChanges(of:in:into:)``); `false` when it cannot tell. The
    /// change index asks it for every action; without it (or on `false`) the index compares the
    /// states before and after as JSON, which costs in proportion to the state.
    public var predictChanges: (@Sendable (State, ActionEnvelope, inout JSONChangeRecorder) -> Bool)?
    /// Applies an action and records what it changed in the same walk, for the actions whose
    /// reducer can (see ``JSONDocumentReducer/applyRecordingChanges(_:to:into:)``): `true` when it
    /// did, exactly as the reducers apply it and ``predictChanges`` records it; `false`, with the
    /// state and the recorder untouched, for any other action or on any error. Asked before
    /// ``predictChanges``, which must be set too.
    public var applyRecordingChanges: (@Sendable (inout State, ActionEnvelope, inout JSONChangeRecorder) -> Bool)?
    /// Applies a stock action read straight from its record (``PreparedStockAction``) exactly as
    /// the reducers apply the action it was read from: `true`; `false`, with the state untouched,
    /// when they would refuse it (the caller then reduces the action, which says why). Set only
    /// where the reducer is the stock one: replays then read the records of its commonest actions
    /// into prepared actions instead of decoding their payloads.
    public var applyPrepared: (@Sendable (inout State, PreparedStockAction) -> Bool)?
    /// ``applyRecordingChanges`` for a prepared action; set with ``applyPrepared``.
    public var applyPreparedRecordingChanges: (@Sendable (inout State, PreparedStockAction, inout JSONChangeRecorder) -> Bool)?

    public init(
        name: String,
        version: String,
        initialState: State,
        middleware: [any Middleware<State>] = [],
        reducer: some Reducer<State>
    ) {
        self.identity = ReducerIdentity(name: name, version: version)
        self.initialState = initialState
        self.middleware = middleware
        self.reducer = reducer
        self.versions = ActionVersions(reducer.actionDescriptions)
        self.fewActionTypes = Self.few(reducer.actionTypes)
    }

    private static func few(_ types: Set<String>) -> [String]? {
        types.count <= 16 ? Array(types) : nil
    }

    public init(
        name: String,
        version: String,
        initialState: State,
        middleware: [any Middleware<State>] = [],
        @ReducerBuilder<State> reducers: () -> [any Reducer<State>]
    ) {
        self.init(
            name: name, version: version, initialState: initialState, middleware: middleware,
            reducer: CombineReducers(reducers())
        )
    }

    /// The action types the reducers handle (store actions such as `@revert` not included).
    public var actionTypes: Set<String> { reducer.actionTypes }

    /// What every action type accepts, the reducers' sorted by type, then the store's own
    /// (`@revert`): what `describe` answers.
    public var actionDescriptions: [ActionDescription] {
        reducer.actionDescriptions + StoreAction.descriptions
    }

    /// Why logged actions of `type` at `version` cannot be folded by this definition, or `nil`
    /// when they can: a type no reducer handles, a version newer than the reducers read, or an
    /// older one without upcasters to the latest. What the daemon checks the history against
    /// before it starts, and `check-history` reports.
    public func problem(reading type: String, version: Int) -> String? {
        if type.utf8.first == UInt8(ascii: "@") {
            guard StoreAction.descriptions.contains(where: { $0.type == type }) else {
                return "'\(type)' is not a store action this build knows"
            }
            return version == 1 ? nil : "version \(version) of '\(type)' is newer than this build reads (version 1)"
        }
        guard reducer.actionTypes.contains(type) else { return "no reducer handles '\(type)'" }
        return versions.problem(reading: type, version: version)
    }

    /// Checks that some reducer handles the action's type; reserved types are the store's business.
    @_specialize(where State == JSONValue)
    public func checkKnown(_ action: Action) throws(ReducerError) {
        let handled = fewActionTypes.map { $0.contains(action.type) } ?? reducer.actionTypes.contains(action.type)
        guard !action.isReserved, !handled else { return }
        let known = reducer.actionTypes.sorted().joined(separator: ", ")
        throw ReducerError(.unknownActionType, "unknown action type '\(action.type)' (known: \(known))")
    }

    /// Runs the middleware chain at dispatch time.
    ///
    /// Specialized for the stock store's state: unspecialized, each step of the chain looked the
    /// metadata of `any Middleware<State>` up at run time (1% of `reeld` at 50 x 16).
    @_specialize(where State == JSONValue)
    public func runMiddleware(_ action: Action, state: State, context: DispatchContext) throws(ReducerError) -> Action {
        var action = action
        for step in middleware {
            action = try step.process(action, state: state, context: context)
        }
        return action
    }
}

extension StoreDefinition where State == JSONValue {
    /// The stock store: state is one JSON document, initially `{}`, changed by the mutations of
    /// ``JSONDocumentReducer``, whose payloads ``JSONDocumentPayloadRules`` checks at dispatch.
    public static var stock: StoreDefinition<JSONValue> {
        var definition = StoreDefinition(
            name: JSONDocumentReducer.name, version: JSONDocumentReducer.version,
            initialState: .object([:]), middleware: [JSONDocumentPayloadRules()], reducer: JSONDocumentReducer()
        )
        definition.predictChanges = { state, action, recorder in
            JSONDocumentReducer.predictChanges(of: action, in: state, into: &recorder)
        }
        definition.applyRecordingChanges = { state, action, recorder in
            JSONDocumentReducer.applyRecordingChanges(action, to: &state, into: &recorder)
        }
        definition.applyPrepared = { state, action in JSONDocumentReducer.apply(action, to: &state) }
        definition.applyPreparedRecordingChanges = { state, action, recorder in
            JSONDocumentReducer.applyRecordingChanges(action, to: &state, into: &recorder)
        }
        return definition
    }
}
