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

    /// An equal value whose outermost storage (a large collection at its top) is its own, not
    /// shared with `self`. The store's writer changes its copy of the state in place while readers
    /// hold another: the first change to storage the two share copies it whole, so a store
    /// unshares its large top-level storage when it opens rather than at its first dispatch.
    /// The default returns `self` (nothing unshared, still correct).
    func unsharingTopLevelStorage() -> Self
}

extension StoreState {
    public func unsharingTopLevelStorage() -> Self { self }
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

    /// The root object's or array's storage copied (their members still shared, each copied
    /// when first changed, in proportion to its own size).
    public func unsharingTopLevelStorage() -> JSONValue {
        switch self {
        case .object(let members):
            // Reserving what it has already copies storage shared with another value, entry for
            // entry (no key is hashed again).
            var copy = members
            copy.unshareStorage()
            return .object(copy)
        case .array(let elements):
            var copy = elements
            copy.reserveCapacity(elements.capacity)
            return .array(copy)
        default:
            return self
        }
    }
}
