import ReelJSON

/// A pure, deterministic state transition: `(state, action) -> state`, or a rejection.
///
/// Reducers must depend on nothing but their inputs: time, identities and randomness come from the
/// ``ActionEnvelope`` (middleware puts them there at dispatch time). That is what lets a log be
/// replayed, from the start or from any checkpoint, to byte-for-byte the same state. The store's
/// writer also folds every action twice, into the two copies of the state it keeps so that no
/// commit copies the whole state: an impure reducer would make them differ.
///
/// A reducer that throws must leave `state` unchanged: check first, then mutate. The store relies on
/// it to avoid copying the state for every action (it still restores the state itself when a later
/// action of an atomic batch fails, and ``CombineReducers`` restores it when one of several
/// reducers of the same action type fails).
public protocol Reducer<State>: Sendable {
    associatedtype State

    /// The action types this reducer handles. An action whose type no reducer of the pipeline lists
    /// is refused at dispatch with ``ReducerError/Code/unknownActionType``.
    var actionTypes: Set<String> { get }

    /// What each of ``actionTypes`` accepts, sorted by type: its payload's JSON Schema and an
    /// example (``ActionDescription``). By default every type is undescribed.
    var actionDescriptions: [ActionDescription] { get }

    /// Folds one action into the state.
    ///
    /// - Parameters:
    ///   - state: the state before the action; on return, the state after it.
    ///   - action: the action with its sequence number, time and dispatcher.
    /// - Throws: ``ReducerError`` to refuse the action.
    func reduce(into state: inout State, action: ActionEnvelope) throws(ReducerError)
}

/// A reducer written as a closure, for one-off logic that does not deserve its own type.
public struct Reduce<State>: Reducer {
    public let actionTypes: Set<String>
    public let actionDescriptions: [ActionDescription]
    private let body: @Sendable (inout State, ActionEnvelope) throws(ReducerError) -> Void

    /// - Parameters:
    ///   - actionTypes: the types `body` handles.
    ///   - descriptions: what some of them accept; the others are undescribed.
    ///   - body: the transition.
    public init(
        _ actionTypes: Set<String>, describedBy descriptions: [ActionDescription] = [],
        _ body: @escaping @Sendable (inout State, ActionEnvelope) throws(ReducerError) -> Void
    ) {
        self.actionTypes = actionTypes
        let described = Dictionary(descriptions.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first })
        self.actionDescriptions = actionTypes.sorted().map { described[$0] ?? .undescribed($0) }
        self.body = body
    }

    public func reduce(into state: inout State, action: ActionEnvelope) throws(ReducerError) {
        try body(&state, action)
    }
}

/// A typed action: a `Codable` payload that knows its action type string.
///
/// ```swift
/// struct AddTodo: ActionPayload {
///     static let actionType = "todos/add"
///     var title: String
/// }
/// ```
///
/// Declare the payload's shape and an example beside it, for `describe`, `reel dispatch --help`
/// and the page's dispatch form:
///
/// ```swift
///     static let payloadSchema = JSONSchema.object(["title": JSONSchema.string], required: ["title"])
///     static let example: AddTodo? = AddTodo(title: "Water the plants")
/// ```
///
/// When the shape changes, the history keeps the old payloads: raise ``version`` and say how a
/// payload of the version before becomes one of this version. Logged actions are upcast when
/// folded, and a client may still dispatch the old shape:
///
/// ```swift
///     static let version = 2
///     static let upcasters = [
///         Upcaster(from: 1) { payload throws(ReducerError) in  // 1 had `name`; 2 calls it `title`
///             guard case .object(var members) = payload, let name = members.removeValue(forKey: "name") else {
///                 throw .rejected("a version 1 payload needs a name")
///             }
///             members["title"] = name
///             return .object(members)
///         }
///     ]
/// ```
public protocol ActionPayload: Codable, Sendable {
    /// The `type` of actions carrying this payload, unique within a store.
    static var actionType: String { get }
    /// A JSON Schema of the payload; by default any object, undescribed.
    static var payloadSchema: JSONValue { get }
    /// A payload to show users; by default none.
    static var example: Self? { get }
    /// The version of this shape of the payload; by default 1.
    static var version: Int { get }
    /// How older versions' payloads become this one's, one version at a time; by default none.
    static var upcasters: [Upcaster] { get }
}

extension ActionPayload {
    /// Decodes the payload of an action of this type.
    ///
    /// An absent payload reads as an empty object, so payload types without fields need no `{}`.
    /// - Throws: ``ReducerError`` `.invalidPayload`, naming the field that was wrong.
    public static func decode(from payload: JSONValue) throws(ReducerError) -> Self {
        do {
            return try JSONValueDecoder().decode(Self.self, from: payload.isNull ? .object([:]) : payload)
        } catch {
            throw ReducerError(.invalidPayload, "invalid payload for '\(actionType)': \(error.message)")
        }
    }
}

/// Handles one typed action: decodes the payload as `Payload` and runs the transition.
///
/// A payload that does not decode is refused with ``ReducerError/Code/invalidPayload`` and a message
/// naming the field that was wrong.
public struct On<State, Payload: ActionPayload>: Reducer {
    private let body: @Sendable (inout State, Payload, ActionEnvelope) throws(ReducerError) -> Void

    public init(
        _ payload: Payload.Type,
        _ body: @escaping @Sendable (inout State, Payload) throws(ReducerError) -> Void
    ) {
        self.body = { (state: inout State, payload: Payload, _: ActionEnvelope) throws(ReducerError) in
            try body(&state, payload)
        }
    }

    /// A handler that also reads the envelope (sequence number, time, dispatcher).
    public init(
        _ payload: Payload.Type,
        withEnvelope body: @escaping @Sendable (inout State, Payload, ActionEnvelope) throws(ReducerError) -> Void
    ) {
        self.body = body
    }

    public var actionTypes: Set<String> { [Payload.actionType] }
    public var actionDescriptions: [ActionDescription] { [Payload.actionDescription] }

    public func reduce(into state: inout State, action: ActionEnvelope) throws(ReducerError) {
        let payload = try Payload.decode(from: action.payload)
        try body(&state, payload, action)
    }
}
