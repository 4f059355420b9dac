/// Reads a JSON document of a shape the caller knows, object member by object member, without
/// building the objects along the way: for a hot path that reads a few known members (the
/// protocol's `dispatch` requests) and would otherwise build, hash and drop a dictionary per object.
///
/// It never explains a refusal: every method answers `false` or `nil` when the text is not what
/// it expects (invalid JSON, a key with escapes or outside ASCII, nesting past `maxDepth`), and
/// the caller then parses the whole document with ``JSONValue/init(parsing:maxDepth:)``, which says
/// what is wrong. So it may refuse valid JSON, but what it accepts it reads exactly as that parser
/// does: values through the same code, depth counted the same way (the document's outermost
/// object is at depth 1).
public struct JSONShapeReader {
    private var parser: JSONParser
    private let maxDepth: Int
    /// How many objects enclose the cursor.
    private var depth = 0

    private init(parser: JSONParser, maxDepth: Int) {
        self.parser = parser
        self.maxDepth = maxDepth
    }

    /// Runs `body` with a reader at the start of `bytes`; its answer, or `nil` for empty input.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 text of the document. Only read during the call.
    ///   - maxDepth: As ``JSONValue/init(parsing:maxDepth:)``'s.
    ///   - body: Reads the document; it should end with ``isAtEnd``.
    // (Inlinable, as `readPlainString`: called unspecialized from another module, a generic
    // `Result` looked its metadata up at every line `reel import` read.)
    @inlinable
    public static func read<Result>(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = 512, _ body: (inout JSONShapeReader) -> Result?
    ) -> Result? {
        guard var reader = reader(bytes, maxDepth: maxDepth) else { return nil }
        return body(&reader)
    }

    /// A reader at the start of `bytes`, or `nil` for empty input.
    @usableFromInline
    static func reader(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> JSONShapeReader? {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
        return JSONShapeReader(
            parser: JSONParser(base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: maxDepth),
            maxDepth: maxDepth
        )
    }

    /// Whether only whitespace is left.
    public mutating func isAtEnd() -> Bool {
        parser.skipWhitespace()
        return parser.index == parser.count
    }

    /// Reads the object at the cursor: `member` gets each key's bytes and must read its value with
    /// this reader, answering `false` to refuse the document. `false` when there is no object here,
    /// it is malformed, nests too deep, or `member` refused.
    public mutating func readObject(_ member: (inout JSONShapeReader, UnsafeRawBufferPointer) -> Bool) -> Bool {
        parser.skipWhitespace()
        guard parser.index < parser.count, parser.base[parser.index] == UInt8(ascii: "{"), depth < maxDepth else {
            return false
        }
        parser.index += 1
        depth += 1
        defer { depth -= 1 }
        parser.skipWhitespace()
        if parser.index < parser.count, parser.base[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
            return true
        }
        while true {
            guard let key = readPlainText() else { return false }
            parser.skipWhitespace()
            guard parser.index < parser.count, parser.base[parser.index] == UInt8(ascii: ":") else { return false }
            parser.index += 1
            guard member(&self, key) else { return false }
            parser.skipWhitespace()
            guard parser.index < parser.count else { return false }
            switch parser.base[parser.index] {
            case UInt8(ascii: ","):
                parser.index += 1
                parser.skipWhitespace()
                // (A trailing comma then fails as a key.)
            case UInt8(ascii: "}"):
                parser.index += 1
                return true
            default:
                return false
            }
        }
    }

    /// Reads the value at the cursor as ``JSONValue/init(parsing:maxDepth:)`` would; `nil` when it
    /// is malformed or nests too deep.
    public mutating func readValue() -> JSONValue? {
        parser.skipWhitespace()
        return try? parser.parseValue(depth: depth)
    }

    /// Reads the value at the cursor as ``readValue()`` would, when it is an integer it reads as
    /// `.int` (no fraction, no exponent, within `Int64`, not `-0`): without the value between.
    /// `nil` for anything else, the cursor left where it was.
    public mutating func readInteger() -> Int64? {
        parser.skipWhitespace()
        let start = parser.index
        guard parser.index < parser.count, let integer = parser.plainInteger() else {
            parser.index = start
            return nil
        }
        return integer
    }

    /// Reads the value at the cursor straight into Reel's binary encoding, as
    /// ``BinaryWriter/writeJSON(_:)`` writes what ``readValue()`` reads, when it is plain (`null`,
    /// booleans, integers, strings of printable ASCII without escapes, and arrays and objects of
    /// those without a repeated key), appending it to `bytes`: `true`. `false` for anything else,
    /// `bytes` and the cursor left as they were, for the caller to ``readValue()`` it.
    public mutating func readBinaryValue(into bytes: inout [UInt8]) -> Bool {
        parser.skipWhitespace()
        let start = parser.index
        guard parser.transcodePlainValue(depth: depth, into: &bytes) else {
            parser.index = start
            return false
        }
        return true
    }

    /// Reads the string at the cursor when it is printable ASCII without escapes, and passes its
    /// bytes (without the quotes) to `body`; `nil` for any other value, or when `body` answers
    /// `nil`. For a value read as something else than a string (a time, a number in text), without
    /// making the `String` first.
    @inlinable
    public mutating func readPlainString<Result>(_ body: (UnsafeRawBufferPointer) -> Result?) -> Result? {
        guard let text = readPlainStringBytes() else { return nil }
        return body(text)
    }

    /// ``readPlainString(_:)``'s bytes.
    @usableFromInline
    mutating func readPlainStringBytes() -> UnsafeRawBufferPointer? {
        parser.skipWhitespace()
        return readPlainText()
    }

    /// Whether a key's bytes are `name`.
    public static func key(_ key: UnsafeRawBufferPointer, is name: StaticString) -> Bool {
        guard key.count == name.utf8CodeUnitCount else { return false }
        let expected = name.utf8Start
        for offset in 0..<key.count where key[offset] != expected[offset] { return false }
        return true
    }

    /// A string of printable ASCII without escapes at the cursor (a key, or a value read as
    /// bytes), as bytes without the quotes; `nil` for any other.
    private mutating func readPlainText() -> UnsafeRawBufferPointer? {
        parser.plainText()
    }
}
