/// The one error type of `ReelStorage`.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// Opaque, extensible kind of failure: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// LMDB or the file system failed (see ``StorageError/underlying``); for a commit this means the
        /// data did not reach the disk.
        public static let io = Code("io")
        /// The disk or the configured maximum map size is full.
        public static let full = Code("full")
        /// A record could not be decoded: the data directory is damaged.
        public static let corrupt = Code("corrupt")
        /// The data directory was written by an incompatible format or for another reducer.
        public static let incompatible = Code("incompatible")
        /// There is no data directory at the path (read-only opens never create one).
        public static let notFound = Code("notFound")
        /// A write was attempted through a read-only handle, or appended seqs do not follow the log.
        public static let invalidWrite = Code("invalidWrite")
    }

    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// The error that caused this one, such as an `LMDBError`.
    public var underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }
}
