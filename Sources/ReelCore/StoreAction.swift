import ReelJSON

/// The actions the store handles itself, for every reducer. Their types start with `@`, which is
/// reserved: users' reducers never see them.
public enum StoreAction: Sendable, Equatable {
    /// Makes the state equal to the state at `to`, by appending an action: time travel that keeps
    /// the log immutable and replay deterministic.
    case revert(to: UInt64)

    public static let revertType = "@revert"

    /// Reads a reserved action.
    ///
    /// - Returns: `nil` when `action` is not reserved (an ordinary action for the reducers).
    /// - Throws: ``ReducerError`` for an unknown reserved type or a malformed payload.
    public init?(_ action: Action) throws(ReducerError) {
        guard action.isReserved else { return nil }
        switch action.type {
        case Self.revertType:
            guard case .object(let members) = action.payload, let to = members["to"]?.intValue, to >= 0 else {
                throw ReducerError(.invalidPayload, "@revert needs a payload {\"to\": seq} with a seq of 0 or more")
            }
            self = .revert(to: UInt64(to))
        default:
            throw ReducerError(
                .unknownActionType,
                "unknown store action '\(action.type)': types starting with '@' are reserved (known: @revert)"
            )
        }
    }

    /// The action to dispatch (and log) for this store action.
    public var action: Action {
        switch self {
        case .revert(let to): Action(type: Self.revertType, payload: ["to": .int(Int64(clamping: to))])
        }
    }
}
