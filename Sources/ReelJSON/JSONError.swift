/// The one error type of `ReelJSON`: parsing, pointers, patches, binary decoding and the Codable bridge.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Opaque and extensible: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The text is not valid JSON (RFC 8259).
        public static let syntax = Code("syntax")
        /// The document nests deeper than the parser allows.
        public static let tooDeep = Code("tooDeep")
        /// A JSON Pointer string is malformed (RFC 6901).
        public static let invalidPointer = Code("invalidPointer")
        /// A JSON Pointer does not resolve to a value in the document.
        public static let pathNotFound = Code("pathNotFound")
        /// A value has the wrong JSON type for the operation (for example adding a member to a number).
        public static let typeMismatch = Code("typeMismatch")
        /// A JSON Patch document is malformed, or one of its operations failed (including `test`).
        public static let invalidPatch = Code("invalidPatch")
        /// Binary-encoded JSON is truncated or corrupt.
        public static let corruptBinary = Code("corruptBinary")
        /// A Swift value could not be converted to or from JSON (the Codable bridge).
        public static let conversion = Code("conversion")
    }

    public var code: Code
    /// A sentence a person can act on, for example `"expected ',' or '}' after object member at byte 17"`.
    public var message: String
    /// The byte offset in the input where parsing failed, when there is one.
    public var offset: Int?

    public init(_ code: Code, _ message: String, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    public var description: String { message }
}
