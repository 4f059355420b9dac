/// A condition on a JSON document, such as `/character/hp <= 0`: the language of `reel bisect EXPR`
/// ("the first seq at which EXPR holds").
///
/// ## Grammar
///
/// ```
/// condition  = ws ( comparison / presence ) ws
/// comparison = pointer ws operator ws value
/// presence   = ( "exists" / "missing" ) ws pointer
/// operator   = "==" / "!=" / "<=" / ">=" / "<" / ">"
/// pointer    = "/" *( any character but whitespace, "=", "!", "<", ">" )   ; bare
///            / string                                                   ; quoted
/// value      = any JSON text (RFC 8259): number, string, true, false, null, array, object
/// ws         = *( space / tab / line feed / carriage return )
/// ```
///
/// - A pointer is a JSON Pointer (RFC 6901): `~1` stands for `/` inside a key and `~0` for `~`.
///   A bare pointer ends at the first whitespace or `=`, `!`, `<`, `>`, so `/a<=1` needs no spaces.
/// - A pointer may be written as a JSON string instead, holding the same RFC 6901 text: needed
///   for the whole document (`""`) and for keys with whitespace or `=!<>` in them, as in
///   `"/first name" == "Ada"`. JSON escapes are undone first, then pointer escapes.
/// - `exists` and `missing` are lowercase keywords.
/// - The value is the rest of the text, parsed as one JSON text by `JSONValue(parsing:)`:
///   strings need double quotes, an integer that fits `Int64` stays exact.
/// - A mistake throws ``JSONConditionError``, which names the column (counting characters from 1)
///   and what was expected there.
///
/// ## Semantics
///
/// - `exists P` holds when there is a value at `P`; a `null` is a value. `missing P` holds when
///   there is none: a missing member, an index out of range, or a step into a scalar.
/// - Every comparison needs a value at `P`. When there is none, all six are false, `!=` too: so
///   `P != V` is not "not `P == V`"; ask `missing P` for absence. Bisect looks for the point where
///   a condition turns true, and a path that does not exist yet would otherwise make nearly every
///   `!=` true at seq 0.
/// - `==` and `!=` use JSON equality (`JSONValue.==`, as JSON Patch `test` does): numbers are
///   equal when their mathematical values are, across integers and doubles and with no rounding
///   (`1 == 1.0`, but `9007199254740993 != 9007199254740992.0`); strings when Swift's `String`
///   equality says so (canonically equivalent spellings are equal); arrays element by element in
///   order; objects when they have the same keys with equal values, in any order.
/// - `<`, `<=`, `>` and `>=` order two numbers or two strings. Numbers compare by exact value,
///   an `Int64` against a `Double` included (`9007199254740993 > 9007199254740992.0`). Strings
///   that are `==` are equal; others are ordered by Unicode scalar values, the first difference
///   deciding and a prefix coming first (the order of their UTF-8 bytes, not a locale's): `"Z" <
///   "a"`, `"a" < "ab"`, `"é" > "z"`. Thus exactly one of `<`, `==`, `>` holds for two numbers or
///   two strings, and `<=` means `<` or `==`. For any other pair (a number and a string, two
///   booleans, nulls, arrays or objects, even equal ones) all four are false.
/// - A NaN, which only a value built in Swift can hold (parsing never makes one), equals and orders
///   against nothing.
///
/// ## Examples
///
/// ```
/// /character/hp <= 0        exists /todos/3          missing /session
/// /status == "done"         /tags == ["a","b"]       "/first name" != "Ada"
/// /a~1b > 2.5               "" == {}                 /flags/beta == true
/// ```
public struct JSONCondition: Sendable, Equatable, CustomStringConvertible {
    /// A comparison operator, spelled as in the condition text.
    public enum Operator: String, Sendable, CaseIterable {
        /// `==`: JSON equality.
        case equal = "=="
        /// `!=`: not JSON-equal (and present).
        case notEqual = "!="
        /// `<`: two numbers or two strings, the first smaller.
        case less = "<"
        /// `<=`: two numbers or two strings, the first smaller or equal.
        case lessOrEqual = "<="
        /// `>`: two numbers or two strings, the first greater.
        case greater = ">"
        /// `>=`: two numbers or two strings, the first greater or equal.
        case greaterOrEqual = ">="
    }

    /// What the condition asks of the value at ``pointer``.
    public enum Predicate: Sendable, Equatable {
        /// There is a value (possibly `null`).
        case exists
        /// There is no value.
        case missing
        /// There is a value and it compares so with this one.
        case comparison(Operator, JSONValue)
    }

    /// The one place in the document the condition looks at, so a caller can fetch only that slice.
    public var pointer: JSONPointer
    /// What must be true of the value at ``pointer``.
    public var predicate: Predicate

    /// Makes a condition from its parts, without parsing.
    ///
    /// - Parameters:
    ///   - pointer: Where to look.
    ///   - predicate: What must be true there.
    public init(pointer: JSONPointer, predicate: Predicate) {
        self.pointer = pointer
        self.predicate = predicate
    }

    /// Parses a condition written in the grammar above.
    ///
    /// - Parameter text: For example `/character/hp <= 0` or `exists /todos/3`.
    /// - Throws: ``JSONConditionError`` naming the column and what was expected there.
    public init(parsing text: String) throws(JSONConditionError) {
        var parser = ConditionParser(text)
        self = try parser.parseCondition()
    }

    /// Whether the condition holds in a whole document.
    ///
    /// - Parameter document: The document ``pointer`` is resolved in.
    public func holds(in document: JSONValue) -> Bool {
        holds(forValueAtPointer: document.value(at: pointer))
    }

    /// Whether the condition holds, given only what is at ``pointer``.
    ///
    /// - Parameter value: The value at ``pointer``, or `nil` when nothing is there.
    public func holds(forValueAtPointer value: JSONValue?) -> Bool {
        switch (predicate, value) {
        case (.exists, .some), (.missing, .none): true
        case (.exists, .none), (.missing, .some): false
        case (.comparison, .none): false
        case let (.comparison(op, expected), .some(actual)): op.evaluate(actual, expected)
        }
    }

    /// The condition in the grammar above, such that parsing it gives back an equal condition
    /// (unless a value holds a non-finite double, which JSON cannot spell). The pointer is quoted
    /// only when it must be; the value is compact canonical JSON.
    public var description: String {
        switch predicate {
        case .exists: "exists \(pointerText)"
        case .missing: "missing \(pointerText)"
        case let .comparison(op, value): "\(pointerText) \(op.rawValue) \(value.jsonString)"
        }
    }

    private var pointerText: String {
        let text = pointer.description
        let needsQuotes = text.isEmpty || text.utf8.contains { ConditionParser.endsBarePointer($0) || $0 < 0x20 || $0 == 0x7F }
        return needsQuotes ? JSONValue.string(text).jsonString : text
    }
}

/// Why a condition's text could not be parsed, with the column a person should look at.
public struct JSONConditionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of mistake this is. Opaque and extensible: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The text does not follow the grammar: a pointer, operator or value is missing or misspelled.
        public static let syntax = Code("syntax")
        /// The pointer is not a valid JSON Pointer (RFC 6901).
        public static let invalidPointer = Code("invalidPointer")
        /// The value is not valid JSON (RFC 8259).
        public static let invalidValue = Code("invalidValue")
    }

    /// What kind of mistake this is.
    public var code: Code
    /// What was expected and what was found, for example
    /// `"expected a JSON value after '<=', found end of input"`.
    public var message: String
    /// Where the problem is: 1 for the first character of the text, counting `Character`s.
    public var column: Int
    /// The ReelJSON error behind an invalid pointer or value, when there is one.
    public var underlying: JSONError?

    /// Makes an error.
    ///
    /// - Parameters:
    ///   - code: What kind of mistake this is.
    ///   - message: What was expected and what was found.
    ///   - column: The 1-based column, in characters, of the mistake.
    ///   - underlying: The ReelJSON error behind it, if any.
    public init(_ code: Code, _ message: String, column: Int, underlying: JSONError? = nil) {
        self.code = code
        self.message = message
        self.column = column
        self.underlying = underlying
    }

    /// `"column 18: expected a JSON value after '<=', found end of input"`.
    public var description: String { "column \(column): \(message)" }
}

extension JSONCondition.Operator {
    /// Whether `actual` (the value at the pointer) compares so with `expected` (the condition's).
    func evaluate(_ actual: JSONValue, _ expected: JSONValue) -> Bool {
        // An unordered pair gives `nil`, which none of the comparisons below accepts.
        switch self {
        case .equal: actual == expected
        case .notEqual: actual != expected
        case .less: ConditionOrder(actual, expected) == .less
        case .lessOrEqual: ConditionOrder(actual, expected).map { $0 != .greater } ?? false
        case .greater: ConditionOrder(actual, expected) == .greater
        case .greaterOrEqual: ConditionOrder(actual, expected).map { $0 != .less } ?? false
        }
    }
}

/// How two numbers or two strings compare; `nil` for any other pair, and for NaN.
private enum ConditionOrder {
    case less, equal, greater

    init?(_ lhs: JSONValue, _ rhs: JSONValue) {
        switch (lhs, rhs) {
        case let (.int(a), .int(b)): self = a < b ? .less : a == b ? .equal : .greater
        case let (.double(a), .double(b)):
            guard let order = Self(a, b) else { return nil }
            self = order
        case let (.int(a), .double(b)):
            guard let order = Self(exactly: a, b) else { return nil }
            self = order
        case let (.double(a), .int(b)):
            guard let order = Self(exactly: b, a) else { return nil }
            self = order.reversed
        case let (.string(a), .string(b)):
            // `==` first, so that canonically equivalent spellings are equal here as in `==`.
            self = a == b ? .equal : a.utf8.lexicographicallyPrecedes(b.utf8) ? .less : .greater
        default:
            return nil
        }
    }

    private init?(_ a: Double, _ b: Double) {
        if a < b { self = .less } else if a > b { self = .greater } else if a == b { self = .equal } else { return nil }
    }

    /// Compares an `Int64` with a `Double` without rounding either: converting the integer to
    /// `Double` would make 2^53 + 1 equal to 2^53, and converting the double to `Int64` can trap.
    private init?(exactly integer: Int64, _ double: Double) {
        if double.isNaN { return nil }
        // -2^63 and 2^63 are exact doubles; every Int64 lies in [-2^63, 2^63).
        if double >= 0x1p63 { self = .less; return }
        if double < -0x1p63 { self = .greater; return }
        let whole = double.rounded(.towardZero)
        let wholeInteger = Int64(whole)  // exact: integral and in range
        if integer != wholeInteger {
            self = integer < wholeInteger ? .less : .greater
        } else {
            // Same integer part: the fraction decides.
            self = double > whole ? .less : double < whole ? .greater : .equal
        }
    }

    var reversed: ConditionOrder {
        switch self {
        case .less: .greater
        case .equal: .equal
        case .greater: .less
        }
    }
}

// MARK: - Parsing

/// A cursor over the UTF-8 bytes of a condition. Every syntax character is ASCII, so byte offsets
/// at tokens are character boundaries and convert to columns exactly.
private struct ConditionParser {
    private let text: String
    private let bytes: [UInt8]
    private var index = 0

    init(_ text: String) {
        self.text = text
        self.bytes = Array(text.utf8)
    }

    /// The bytes that end a bare pointer: whitespace and the operator characters.
    static func endsBarePointer(_ byte: UInt8) -> Bool {
        isWhitespace(byte) || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "!")
            || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">")
    }

    /// The same whitespace as RFC 8259, so the value's own parser agrees on it.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    mutating func parseCondition() throws(JSONConditionError) -> JSONCondition {
        skipWhitespace()
        guard index < bytes.count else {
            throw failure("expected a condition such as '/path == 1', 'exists /path' or 'missing /path'")
        }
        for (keyword, predicate) in [("exists", JSONCondition.Predicate.exists), ("missing", .missing)] where atKeyword(keyword) {
            index += keyword.utf8.count
            skipWhitespace()
            let pointer = try parsePointer(after: "'\(keyword)'")
            skipWhitespace()
            guard index == bytes.count else {
                throw failure("expected the end of the condition after the pointer", hint: "'\(keyword)' takes only a pointer")
            }
            return JSONCondition(pointer: pointer, predicate: predicate)
        }
        let pointer = try parsePointer(after: nil)
        skipWhitespace()
        let op = try parseOperator()
        skipWhitespace()
        return JSONCondition(pointer: pointer, predicate: .comparison(op, try parseValue(after: op)))
    }

    /// Whether `keyword` starts at `index` as a whole word: followed by the end, whitespace or
    /// the start of a pointer.
    private func atKeyword(_ keyword: String) -> Bool {
        let end = index + keyword.utf8.count
        guard end <= bytes.count, bytes[index..<end].elementsEqual(keyword.utf8) else { return false }
        return end == bytes.count || Self.isWhitespace(bytes[end]) || bytes[end] == UInt8(ascii: "/") || bytes[end] == UInt8(ascii: "\"")
    }

    private mutating func parsePointer(after keyword: String?) throws(JSONConditionError) -> JSONPointer {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "\"") else {
            let expected = "expected a JSON Pointer ('/' then keys, or quoted: \"\" is the whole document)"
            guard let keyword else {
                throw failure("\(expected), 'exists' or 'missing'", hint: pointerOrKeywordHint())
            }
            throw failure("\(expected) after \(keyword)")
        }
        let start = index
        let pointerText: String
        if bytes[index] == UInt8(ascii: "\"") {
            pointerText = try parseQuotedPointer()
        } else {
            while index < bytes.count, !Self.endsBarePointer(bytes[index]) { index += 1 }
            pointerText = String(decoding: bytes[start..<index], as: UTF8.self)
            try checkTildes(from: start)
        }
        do throws(JSONError) {
            return try JSONPointer(pointerText)
        } catch {
            if pointerText.utf8.first != UInt8(ascii: "/") {
                throw JSONConditionError(
                    .invalidPointer,
                    "expected a JSON Pointer (\"\" or starting with '/'), found \(JSONValue.string(pointerText))",
                    column: column(at: start), underlying: error
                )
            }
            throw JSONConditionError(.invalidPointer, error.message, column: column(at: start), underlying: error)
        }
    }

    /// Reads the JSON string at `index` and returns its content.
    /// For a word where a condition should start: a path without its leading `/`
    /// (`character/hp`), or a misspelled keyword (`exist`, `MISSING`).
    private func pointerOrKeywordHint() -> String? {
        guard index < bytes.count, isWordStart(bytes[index]) else { return nil }
        let found = word(at: index)
        let lowercased = found.lowercased()
        if !found.contains("/"), let keyword = ["exists", "missing"].first(where: { lowercased.hasPrefix($0.prefix(3)) }) {
            return "did you mean '\(keyword)'?"
        }
        return "did you mean '/\(found)'?"
    }

    private mutating func parseQuotedPointer() throws(JSONConditionError) -> String {
        let open = index
        var close = open + 1
        // Find the closing quote; the JSON parser then checks everything in between.
        while close < bytes.count, bytes[close] != UInt8(ascii: "\"") {
            close += bytes[close] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard close < bytes.count else {
            index = bytes.count
            throw failure("expected '\"' to end the quoted pointer that starts at column \(column(at: open))")
        }
        index = close + 1
        do throws(JSONError) {
            // A lone string literal parses to `.string`: nothing else can start with '"'.
            return try JSONValue(parsing: Array(bytes[open...close])).stringValue ?? ""
        } catch {
            throw invalidJSON(error, at: open, code: .invalidPointer)
        }
    }

    /// Points at the very `~` that is not followed by `0` or `1`, rather than at the pointer.
    private func checkTildes(from start: Int) throws(JSONConditionError) {
        for position in start..<index where bytes[position] == UInt8(ascii: "~") {
            let next = position + 1 < index ? bytes[position + 1] : nil
            if next != UInt8(ascii: "0") && next != UInt8(ascii: "1") {
                throw JSONConditionError(
                    .invalidPointer,
                    "expected '0' or '1' after '~' in the pointer ('~0' stands for '~', '~1' for '/')",
                    column: column(at: position)
                )
            }
        }
    }

    private mutating func parseOperator() throws(JSONConditionError) -> JSONCondition.Operator {
        let expected = "expected a comparison operator (==, !=, <, <=, >, >=)"
        guard index < bytes.count else { throw failure("\(expected) after the pointer") }
        let first = bytes[index]
        let secondIsEquals = index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "=")
        let op: JSONCondition.Operator
        switch first {
        case UInt8(ascii: "=") where secondIsEquals: op = .equal
        case UInt8(ascii: "!") where secondIsEquals: op = .notEqual
        case UInt8(ascii: "<"): op = secondIsEquals ? .lessOrEqual : .less
        case UInt8(ascii: ">"): op = secondIsEquals ? .greaterOrEqual : .greater
        case UInt8(ascii: "="): throw failure(expected, hint: "write '==' to test equality")
        default: throw failure(expected)
        }
        index += op.rawValue.utf8.count
        return op
    }

    private mutating func parseValue(after op: JSONCondition.Operator) throws(JSONConditionError) -> JSONValue {
        guard index < bytes.count else { throw failure("expected a JSON value after '\(op.rawValue)'") }
        // A bare word is the likeliest mistake on a command line: say what to type instead.
        if isWordStart(bytes[index]) || bytes[index] == UInt8(ascii: "'") {
            let found = word(at: index)
            let literals = ["true", "false", "null"]
            if !literals.contains(found) {
                let lowercased = found.lowercased()
                if let literal = literals.first(where: { $0 == lowercased || (found.count >= 2 && $0.hasPrefix(lowercased)) }) {
                    throw failure("expected a JSON value", hint: "did you mean '\(literal)'?")
                }
                let unquoted = found.count >= 2 && found.hasPrefix("'") && found.hasSuffix("'") ? String(found.dropFirst().dropLast()) : found
                throw failure("expected a JSON value", hint: "strings need double quotes, as in \(JSONValue.string(unquoted))")
            }
        }
        do throws(JSONError) {
            return try JSONValue(parsing: Array(bytes[index...]))
        } catch {
            throw invalidJSON(error, at: index, code: .invalidValue)
        }
    }

    // MARK: Helpers

    private mutating func skipWhitespace() {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    private func isWordStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    /// The run of characters at `position` up to whitespace or an operator character, shortened
    /// for a message.
    private func word(at position: Int) -> String {
        var end = position
        while end < bytes.count, !Self.endsBarePointer(bytes[end]) { end += 1 }
        let word = String(decoding: bytes[position..<end], as: UTF8.self)
        return word.count > 24 ? String(word.prefix(23)) + "…" : word
    }

    /// A syntax error at `index`: "`expected`, found …", then the hint.
    private func failure(_ expected: String, hint: String? = nil) -> JSONConditionError {
        var found = "end of input"
        if index < bytes.count {
            var word = word(at: index)
            if word.isEmpty {
                // Operator characters end a word; show the run of them instead.
                var end = index
                while end < bytes.count, Self.endsBarePointer(bytes[end]), !Self.isWhitespace(bytes[end]) { end += 1 }
                word = String(decoding: bytes[index..<end], as: UTF8.self)
            }
            found = "'\(word)'"
        }
        let message = "\(expected), found \(found)" + (hint.map { "; \($0)" } ?? "")
        return JSONConditionError(.syntax, message, column: column(at: index))
    }

    /// A ReelJSON parse error of the text that starts at byte `start`, moved to a column.
    private func invalidJSON(_ error: JSONError, at start: Int, code: JSONConditionError.Code) -> JSONConditionError {
        let offset = start + (error.offset ?? 0)
        var message = error.message
        // The parser says where in bytes; the column replaces that.
        if let inner = error.offset, message.hasSuffix(" at byte \(inner)") {
            message.removeLast(" at byte \(inner)".count)
        }
        return JSONConditionError(code, message, column: column(at: min(offset, bytes.count)), underlying: error)
    }

    /// The 1-based column of byte `offset`, counting characters as a terminal shows them.
    private func column(at offset: Int) -> Int {
        let prefix = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
        return text[..<prefix].count + 1
    }
}
