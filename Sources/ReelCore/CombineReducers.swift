/// Several reducers over the same state, run in order for each action they handle
/// (Redux `combineReducers`, TCA's reducer body).
///
/// Each action goes only to the reducers that list its type. If one of them throws, the action is
/// refused as a whole.
public struct CombineReducers<State>: Reducer {
    private let reducers: [any Reducer<State>]
    /// For each action type, the reducers that handle it, in order: computed once, so dispatching an
    /// action does not ask every reducer.
    private let handlers: [String: [Int]]
    public let actionTypes: Set<String>

    public init(@ReducerBuilder<State> _ build: () -> [any Reducer<State>]) {
        self.init(build())
    }

    public init(_ reducers: [any Reducer<State>]) {
        self.reducers = reducers
        var handlers: [String: [Int]] = [:]
        for (index, reducer) in reducers.enumerated() {
            for type in reducer.actionTypes {
                handlers[type, default: []].append(index)
            }
        }
        self.handlers = handlers
        self.actionTypes = Set(handlers.keys)
    }

    /// Each type as the first reducer that handles it describes it.
    public var actionDescriptions: [ActionDescription] {
        var described: [String: ActionDescription] = [:]
        for reducer in reducers {
            for description in reducer.actionDescriptions where described[description.type] == nil {
                described[description.type] = description
            }
        }
        return described.values.sorted { $0.type < $1.type }
    }

    public func reduce(into state: inout State, action: ActionEnvelope) throws(ReducerError) {
        guard let indices = handlers[action.type] else { return }
        if indices.count == 1 {
            try reducers[indices[0]].reduce(into: &state, action: action)
            return
        }
        // Several reducers: if a later one refuses, the earlier ones' changes must not stay.
        var next = state
        for index in indices {
            try reducers[index].reduce(into: &next, action: action)
        }
        state = next
    }
}

/// Runs a reducer of a slice of the state (TCA `Scope`): the child sees and changes only
/// `state[keyPath: slice]`.
public struct Scope<State, Child: Reducer>: Reducer {
    private let slice: WritableKeyPath<State, Child.State> & Sendable
    private let child: Child

    public init(_ slice: WritableKeyPath<State, Child.State> & Sendable, _ child: Child) {
        self.slice = slice
        self.child = child
    }

    /// Several reducers of one slice, one per line.
    public init<Slice>(
        _ slice: WritableKeyPath<State, Slice> & Sendable,
        @ReducerBuilder<Slice> _ build: () -> [any Reducer<Slice>]
    ) where Child == CombineReducers<Slice> {
        self.init(slice, CombineReducers(build))
    }

    public var actionTypes: Set<String> { child.actionTypes }
    public var actionDescriptions: [ActionDescription] { child.actionDescriptions }

    public func reduce(into state: inout State, action: ActionEnvelope) throws(ReducerError) {
        try child.reduce(into: &state[keyPath: slice], action: action)
    }
}

/// Builds the list of reducers of a ``CombineReducers`` from a block, one reducer per line.
@resultBuilder
public enum ReducerBuilder<State> {
    public static func buildExpression<R: Reducer>(_ reducer: R) -> [any Reducer<State>] where R.State == State {
        [reducer]
    }

    public static func buildBlock(_ parts: [any Reducer<State>]...) -> [any Reducer<State>] {
        parts.flatMap { $0 }
    }

    public static func buildOptional(_ part: [any Reducer<State>]?) -> [any Reducer<State>] {
        part ?? []
    }

    public static func buildEither(first: [any Reducer<State>]) -> [any Reducer<State>] { first }
    public static func buildEither(second: [any Reducer<State>]) -> [any Reducer<State>] { second }

    public static func buildArray(_ parts: [[any Reducer<State>]]) -> [any Reducer<State>] {
        parts.flatMap { $0 }
    }
}
