/// A JSON Pointer (RFC 6901): a path to one value inside a JSON document.
///
/// The pointer is kept as its unescaped reference tokens, so `"/a~1b/~0"` has the tokens
/// `["a/b", "~"]`. The empty pointer `""` (no tokens) is the whole document.
///
/// A token applied to an array must be `"0"` or digits without a leading zero; the token `"-"`
/// names the position just past the last element, which only `add` (append) can use.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The unescaped reference tokens, outermost first. Empty for the root.
    public let tokens: [String]

    /// Parses the string form of a pointer.
    ///
    /// - Parameter string: `""` for the whole document, otherwise `/`-separated tokens in which
    ///   `~1` stands for `/` and `~0` for `~`.
    /// - Throws: `JSONError` with code `.invalidPointer` when the string is not empty and does not
    ///   start with `/`, or contains a `~` that is not followed by `0` or `1`.
    public init(_ string: String) throws(JSONError) {
        if string.isEmpty {
            self.tokens = []
            return
        }
        var string = string
        // Scan the bytes directly: pointers are parsed for every logged patch at replay.
        self.tokens = try string.withUTF8(Self.tokens(of:)).get()
    }

    /// Parses the string form of a pointer from its bytes, which are valid UTF-8.
    init(validUTF8 bytes: UnsafeBufferPointer<UInt8>) throws(JSONError) {
        self.tokens = bytes.isEmpty ? [] : try Self.tokens(of: bytes).get()
    }

    private static func tokens(of bytes: UnsafeBufferPointer<UInt8>) -> Result<[String], JSONError> {
        Result { () throws(JSONError) -> [String] in
            guard bytes.first == UInt8(ascii: "/") else {
                throw JSONError(.invalidPointer, "JSON Pointer \"\(String(decoding: bytes, as: UTF8.self))\" must be empty or start with '/'")
            }
            var tokens: [String] = []
            // As many tokens as slashes, reserved at once: a deeper path grew the array twice.
            tokens.reserveCapacity(bytes.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) })
            // Split on raw '/' bytes: '/' never occurs inside a multi-byte UTF-8 sequence, and an
            // escaped slash is spelled "~1", so every raw '/' is a separator.
            var start = 1
            var index = 1
            var escaped = false
            while true {
                if index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                    let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    tokens.append(escaped ? try Self.unescape(token, in: bytes) : String(decoding: token, as: UTF8.self))
                    if index == bytes.count { break }
                    start = index + 1
                    escaped = false
                } else if bytes[index] == UInt8(ascii: "~") {
                    escaped = true
                }
                index += 1
            }
            return tokens
        }
    }

    /// Makes a pointer from unescaped tokens; any string is a valid token.
    ///
    /// - Parameter tokens: The reference tokens, outermost first; `[]` is the root.
    public init(tokens: [String]) {
        self.tokens = tokens
    }

    /// The pointer to the whole document, `""`.
    public static let root = JSONPointer(tokens: [])

    /// Whether this is the pointer to the whole document.
    public var isRoot: Bool { tokens.isEmpty }

    /// The pointer to the value that contains this one; `nil` for the root.
    public var parent: JSONPointer? {
        isRoot ? nil : JSONPointer(tokens: Array(tokens.dropLast()))
    }

    /// The last reference token (a member name or array index); `nil` for the root.
    public var lastToken: String? { tokens.last }

    /// A pointer one level deeper.
    ///
    /// - Parameter token: The unescaped member name or array index to add.
    /// - Returns: This pointer followed by `token`.
    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    /// Whether this pointer is `other` or one of its ancestors, token by token (so `/a` is a
    /// prefix of `/a/b` and of `/a`, but not of `/ab`).
    ///
    /// - Parameter other: The pointer that might lie at or under this one.
    /// - Returns: `true` when `other` starts with all of this pointer's tokens.
    public func isPrefix(of other: JSONPointer) -> Bool {
        tokens.count <= other.tokens.count && tokens.elementsEqual(other.tokens[..<tokens.count])
    }

    /// The escaped string form, `""` for the root; `JSONPointer(p.description)` gives back `p`.
    public var description: String {
        var result = ""
        for token in tokens { Self.append(token, to: &result) }
        return result
    }

    /// Appends `/` and `token`, escaped, to the string form of a pointer (`pointer.appending(token)`
    /// without the array of tokens).
    public static func append(_ token: String, to pointer: inout String) {
        pointer.append("/")
        if !token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) {
            pointer.append(token)
            return
        }
        // Escaping "~" before "/" (RFC 6901 section 3) is automatic here: each character is
        // escaped exactly once, so "~1" in a name becomes "~01", never "/".
        for character in token.unicodeScalars {
            switch character {
            case "~": pointer.append("~0")
            case "/": pointer.append("~1")
            default: pointer.unicodeScalars.append(character)
            }
        }
    }

    /// Replaces `~1` by `/` and `~0` by `~` in one token. Decoding left to right in one pass is
    /// what makes `"~01"` mean `"~1"` and not `"/"` (RFC 6901 section 4).
    private static func unescape(_ bytes: UnsafeBufferPointer<UInt8>, in pointer: UnsafeBufferPointer<UInt8>) throws(JSONError) -> String {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard byte == UInt8(ascii: "~") else {
                result.append(byte)
                continue
            }
            let next = index == bytes.count ? nil : bytes[index]
            switch next {
            case UInt8(ascii: "0"): result.append(UInt8(ascii: "~"))
            case UInt8(ascii: "1"): result.append(UInt8(ascii: "/"))
            default:
                throw JSONError(
                    .invalidPointer,
                    "JSON Pointer \"\(String(decoding: pointer, as: UTF8.self))\" has an invalid escape: '~' must be followed by '0' or '1'"
                )
            }
            index += 1
        }
        // The input was valid UTF-8 and only ASCII bytes were rewritten, so this never repairs.
        return String(decoding: result, as: UTF8.self)
    }
}

extension JSONPointer {
    /// The array index a token names, or `nil` when it is not `"0"` or digits without a leading
    /// zero. An index too large for `Int` comes back as `Int.max`: it is well formed, just out
    /// of range for every array.
    public static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        var overflowed = false
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if !overflowed {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                if o1 || o2 { overflowed = true } else { value = sum }
            }
        }
        return overflowed ? Int.max : value
    }

    /// The first `count` tokens, for naming an ancestor in error messages.
    func prefix(_ count: Int) -> JSONPointer {
        JSONPointer(tokens: Array(tokens.prefix(count)))
    }

    /// This pointer for people: its string form, or "the root" for `""`, which would otherwise
    /// vanish from a sentence.
    var displayName: String { isRoot ? "the root" : description }
}
