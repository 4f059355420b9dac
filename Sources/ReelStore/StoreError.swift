import ReelCore
import ReelStorage

/// The one error type of `ReelStore`. Each code corresponds to one error code of the wire protocol
/// (SPEC.md), so the server can pass them on unchanged.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Opaque, extensible kind of failure: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        /// The protocol's numeric error code.
        public let wireCode: Int
        private init(_ name: String, _ wireCode: Int) {
            self.name = name
            self.wireCode = wireCode
        }
        public var description: String { name }

        /// A reducer or middleware refused the action; nothing was logged (1001).
        public static let rejected = Code("rejected", 1001)
        /// No reducer handles the action type (1002).
        public static let unknownActionType = Code("unknownActionType", 1002)
        /// `expectedSeq` is not the latest seq (1003); ``StoreError/currentSeq`` has the latest.
        public static let seqMismatch = Code("seqMismatch", 1003)
        /// The peer may not do this (1004).
        public static let permissionDenied = Code("permissionDenied", 1004)
        /// A path does not exist in the state (1005).
        public static let pathNotFound = Code("pathNotFound", 1005)
        /// A seq outside 0...latest (1006).
        public static let seqOutOfRange = Code("seqOutOfRange", 1006)
        /// A message or value over a limit (1007).
        public static let tooLarge = Code("tooLarge", 1007)
        /// Overloaded or a limit reached (1008).
        public static let overloaded = Code("overloaded", 1008)
        /// The store is closing or closed (1009).
        public static let shuttingDown = Code("shuttingDown", 1009)
        /// Storage failed: the action was not made durable and is not acknowledged (1010).
        public static let storage = Code("storage", 1010)
        /// Malformed arguments to a store call, such as a path that is not a JSON Pointer (-32602).
        public static let invalidArgument = Code("invalidArgument", -32602)
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
