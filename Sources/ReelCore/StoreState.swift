import ReelJSON

/// The state a store keeps: a value that can be compared, shared across threads and written to JSON
/// (for checkpoints, `get` and subscriptions).
///
/// Any `Codable & Equatable & Sendable` type conforms with no code; the conversion goes through
/// ``JSONValueEncoder``. ``JSONValue`` itself conforms with the identity conversion.
public protocol StoreState: Codable, Equatable, Sendable {
    /// The state as a JSON document.
    func jsonValue() throws(JSONError) -> JSONValue
    /// The state from a JSON document made by ``jsonValue()``.
    init(jsonValue: JSONValue) throws(JSONError)
}

extension StoreState {
    public func jsonValue() throws(JSONError) -> JSONValue {
        try JSONValueEncoder().encode(self)
    }

    public init(jsonValue: JSONValue) throws(JSONError) {
        self = try JSONValueDecoder().decode(Self.self, from: jsonValue)
    }
}

extension JSONValue: StoreState {
    public func jsonValue() -> JSONValue { self }
    public init(jsonValue: JSONValue) { self = jsonValue }
}
