/// Why a reducer or middleware did not accept an action. Nothing is logged for a rejected action and
/// the state is unchanged.
public struct ReducerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Opaque, extensible kind of failure: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The reducer understood the action and refused it (wire error 1001).
        public static let rejected = Code("rejected")
        /// No reducer handles this action type (wire error 1002).
        public static let unknownActionType = Code("unknownActionType")
        /// The payload does not have the shape the action type requires (wire error 1001).
        public static let invalidPayload = Code("invalidPayload")
        /// The dispatching peer may not perform this action (wire error 1004).
        public static let permissionDenied = Code("permissionDenied")
    }

    public var code: Code
    /// A sentence a person can act on, for example `"/hp is not a number"`.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A rejection with a message: the usual way for a reducer to refuse an action.
    public static func rejected(_ message: String) -> ReducerError {
        ReducerError(.rejected, message)
    }

    public var description: String { message }
}
