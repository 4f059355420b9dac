import ReelCore
import ReelStorage

/// The one error type of `ReelStore`: what went wrong in the engine, in its own terms. The wire
/// protocol's codes are not the engine's business; the server and the offline tool map these to
/// them in one place (`RPCError.init(_:expectedSeq:)` in ReelQuery).
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Opaque, extensible kind of failure: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) {
            self.name = name
        }
        public var description: String { name }

        /// A reducer or middleware refused the action; nothing was logged.
        public static let rejected = Code("rejected")
        /// No reducer handles the action type.
        public static let unknownActionType = Code("unknownActionType")
        /// `expectedSeq` is not the latest seq; ``StoreError/currentSeq`` has the latest.
        public static let seqMismatch = Code("seqMismatch")
        /// A reducer or middleware refused the action for the peer that dispatched it.
        public static let permissionDenied = Code("permissionDenied")
        /// A path does not exist in the state.
        public static let pathNotFound = Code("pathNotFound")
        /// A seq outside 0...latest.
        public static let seqOutOfRange = Code("seqOutOfRange")
        /// The store is closing or closed.
        public static let shuttingDown = Code("shuttingDown")
        /// Storage failed: the action was not made durable and is not acknowledged; or stored data
        /// is damaged and was not served.
        public static let storage = Code("storage")
        /// Malformed arguments to a store call, such as a path that is not a JSON Pointer.
        public static let invalidArgument = Code("invalidArgument")
        /// The log holds actions the store's reducers cannot read (a type none handles, a version
        /// newer than they read or without upcasters): the store does not open.
        public static let unreadableHistory = Code("unreadableHistory")
    }

    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// With ``Code/seqMismatch``: the latest seq when the dispatch was refused.
    public var currentSeq: UInt64?
    /// The error that caused this one.
    public var underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, currentSeq: UInt64? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.currentSeq = currentSeq
        self.underlying = underlying
    }

    public var description: String { message }

    init(_ error: ReducerError) {
        let code: Code = switch error.code {
        case .unknownActionType: .unknownActionType
        case .permissionDenied: .permissionDenied
        default: .rejected
        }
        self.init(code, error.message, underlying: error)
    }

    init(_ error: StorageError) {
        self.init(.storage, error.message, underlying: error)
    }

    /// The error of a walk over the log whose body throws untyped: a store error as it is, a
    /// storage error wrapped, anything else as a storage failure of `what`.
    static func walking(_ error: any Error, _ what: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? StorageError { return StoreError(error) }
        return StoreError(.storage, "\(what) failed: \(error)")
    }
}
