// A strict RFC 8259 parser. It reads raw UTF-8 bytes by index and builds `String`s straight from
// byte ranges, because it sits on the wire protocol's hot path: no per-character String building,
// and a string without escapes is a single copy of its bytes.

extension JSONValue {
    /// Parses one JSON document (RFC 8259) from UTF-8 bytes.
    ///
    /// The parser is strict: it rejects trailing commas, leading zeros, unescaped control characters,
    /// invalid escapes, unpaired surrogates, invalid UTF-8 and anything but whitespace after the value.
    /// A number without fraction or exponent that fits `Int64` becomes `.int`; every other number becomes
    /// `.double` (and `-0` becomes `.double(-0.0)`, since `Int64` has no negative zero). A number too large
    /// for `Double` is rejected. When an object repeats a key, the last member wins.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 text of the document. It is only read during the call.
    ///   - maxDepth: How many arrays and objects may nest inside each other; `0` allows only scalars.
    ///     The parser recurses once per level, so this also bounds its stack use: keep it modest for
    ///     untrusted input.
    /// - Throws: `JSONError` with code `.syntax` (and the byte `offset` of the problem) for invalid JSON,
    ///   or `.tooDeep` when the document nests deeper than `maxDepth`.
    public init(parsing bytes: UnsafeRawBufferPointer, maxDepth: Int = 512) throws(JSONError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONError(.syntax, "expected a JSON value, found end of input at byte 0", offset: 0)
        }
        // Every bit pattern is a valid UInt8, and byte access may alias any type.
        var parser = JSONParser(base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: maxDepth)
        self = try parser.parseDocument()
    }

    /// Parses one JSON document (RFC 8259) from UTF-8 bytes.
    ///
    /// The rules are those of `init(parsing:maxDepth:)` over an `UnsafeRawBufferPointer`.
    /// - Throws: `JSONError` with code `.syntax` or `.tooDeep`.
    public init(parsing bytes: [UInt8], maxDepth: Int = 512) throws(JSONError) {
        self = try bytes.withUnsafeBufferPointer { (buffer) throws(JSONError) -> JSONValue in
            try JSONValue(parsing: UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
        }
    }

    /// Parses one JSON document (RFC 8259) from text.
    ///
    /// The rules are those of `init(parsing:maxDepth:)` over an `UnsafeRawBufferPointer`. Offsets in errors count
    /// UTF-8 bytes of `text`, not characters.
    /// - Throws: `JSONError` with code `.syntax` or `.tooDeep`.
    public init(parsing text: String, maxDepth: Int = 512) throws(JSONError) {
        var text = text
        // `withUTF8` is `rethrows`, not typed, so the typed error travels out inside a Result.
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSONValue in
                try JSONValue(parsing: UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
            }
        }
        self = try result.get()
    }
}

/// The parser's cursor over one document. Invariant: `index <= count`, and `base[index]` is read only
/// after checking `index < count`.
struct JSONParser {
    // (Not private: JSONShapeReader walks the same cursor.)
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    var index = 0
    /// Reused across strings that contain escapes, so unescaping allocates only when it grows.
    private var scratch: [UInt8] = []

    init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
        self.base = base
        self.count = count
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if index < count {
            throw syntax("unexpected \(describe(base[index])) after the JSON value", at: index)
        }
        return value
    }

    // MARK: Values

    /// Parses the value at `index`; `depth` is the number of arrays and objects around it.
    mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard index < count else { throw expected("a JSON value") }
        switch base[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "t"):
            try parseLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try parseLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try parseLiteral("null")
            return .null
        default:
            throw expected("a JSON value")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
        try checkDepth(depth)
        index += 1  // '{'
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        // Room for a few members up front (a payload's usual count): growing from empty
        // reallocates at 1, 2 and 3 members.
        var object = JSONObject(minimumCapacity: 4)
        while true {
            guard index < count, base[index] == UInt8(ascii: "\"") else { throw expected("'\"' to start an object key") }
            let key = try parseString()
            skipWhitespace()
            guard index < count, base[index] == UInt8(ascii: ":") else { throw expected("':' after object key") }
            index += 1
            skipWhitespace()
            object[key] = try parseValue(depth: depth)  // a repeated key: the last one wins
            skipWhitespace()
            guard index < count else { throw expected("',' or '}' after object member") }
            switch base[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                skipWhitespace()
                if index < count, base[index] == UInt8(ascii: "}") {
                    throw syntax("trailing comma before '}'", at: comma)
                }
            case UInt8(ascii: "}"):
                index += 1
                return .object(object)
            default:
                throw expected("',' or '}' after object member")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
        try checkDepth(depth)
        index += 1  // '['
        var array: [JSONValue] = []
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "]") {
            index += 1
            return .array(array)
        }
        while true {
            array.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < count else { throw expected("',' or ']' after array element") }
            switch base[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                skipWhitespace()
                if index < count, base[index] == UInt8(ascii: "]") {
                    throw syntax("trailing comma before ']'", at: comma)
                }
            case UInt8(ascii: "]"):
                index += 1
                return .array(array)
            default:
                throw expected("',' or ']' after array element")
            }
        }
    }

    private func checkDepth(_ depth: Int) throws(JSONError) {
        if depth > maxDepth {
            throw JSONError(.tooDeep, "arrays and objects nest deeper than \(maxDepth) levels at byte \(index)", offset: index)
        }
    }

    mutating func parseLiteral(_ literal: StaticString) throws(JSONError) {
        let start = index
        let length = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        for k in 0..<length {
            guard start + k < count, base[start + k] == text[k] else {
                throw syntax("invalid literal; expected '\(literal)'", at: start)
            }
        }
        index = start + length
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = index
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < count, isDigit(base[index]) else { throw expected("a digit") }

        // The integer part is accumulated as a negative number so that Int64.min fits.
        var accumulator: Int64 = 0
        var overflowed = false
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < count, isDigit(base[index]) {
                throw syntax("leading zeros are not allowed in numbers", at: start)
            }
        } else {
            while index < count, isDigit(base[index]) {
                if !overflowed {
                    let (times10, o1) = accumulator.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times10.subtractingReportingOverflow(Int64(base[index] &- UInt8(ascii: "0")))
                    if o1 || o2 { overflowed = true } else { accumulator = next }
                }
                index += 1
            }
        }

        var isInteger = true
        if index < count, base[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < count, isDigit(base[index]) else { throw expected("a digit after '.'") }
            while index < count, isDigit(base[index]) { index += 1 }
        }
        if index < count, base[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            if index < count, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            guard index < count, isDigit(base[index]) else { throw expected("a digit in the exponent") }
            while index < count, isDigit(base[index]) { index += 1 }
        }

        if isInteger && !overflowed {
            if negative {
                if accumulator != 0 { return .int(accumulator) }
                // "-0": keep the sign, which Int64 cannot.
            } else if accumulator != .min {
                return .int(-accumulator)
            }
        }
        // The grammar is already checked, so Double(_:) only has to round; short texts stay inline
        // in the String and do not allocate.
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            let shown = text.utf8.count > 40 ? String(text.prefix(40)) + "…" : text
            throw syntax("number \(shown) is out of range", at: start)
        }
        return .double(double)
    }

    // MARK: Strings

    /// Parses the string whose opening quote is at `index`. Bytes are validated as they are scanned;
    /// only a string with escapes is copied through `scratch`.
    private mutating func parseString() throws(JSONError) -> String {
        let open = index
        index += 1
        var runStart = index
        var hasEscapes = false
        while true {
            // Jump to the next byte that needs a decision, eight bytes at a time while there are eight.
            if index + 8 <= count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let mask = attentionMask(word)
                if mask == 0 {
                    index += 8
                    continue
                }
                index += mask.trailingZeroBitCount >> 3
            } else {
                guard index < count else { break }
                let byte = base[index]
                if byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                    index += 1
                    continue
                }
            }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(start: base + runStart, count: index - runStart)
                index += 1
                if !hasEscapes { return makeString(utf8: run) }
                scratch.append(contentsOf: run)
                return scratch.withUnsafeBufferPointer { makeString(utf8: $0) }
            } else if byte == UInt8(ascii: "\\") {
                if !hasEscapes {
                    hasEscapes = true
                    scratch.removeAll(keepingCapacity: true)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: index - runStart))
                try parseEscape()
                runStart = index
            } else if byte < 0x20 {
                let hex = String(byte, radix: 16, uppercase: true)
                throw syntax("control character U+\(byte < 0x10 ? "000" : "00")\(hex) must be escaped in a string", at: index)
            } else if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw syntax("unterminated string (it starts at byte \(open))", at: count)
    }

    /// Decodes the escape whose backslash is at `index` into `scratch`.
    private mutating func parseEscape() throws(JSONError) {
        let start = index
        guard index + 1 < count else { throw syntax("unterminated escape sequence", at: start) }
        let unescaped: UInt8
        switch base[index + 1] {
        case UInt8(ascii: "\""): unescaped = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): unescaped = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): unescaped = UInt8(ascii: "/")
        case UInt8(ascii: "b"): unescaped = 0x08
        case UInt8(ascii: "f"): unescaped = 0x0C
        case UInt8(ascii: "n"): unescaped = 0x0A
        case UInt8(ascii: "r"): unescaped = 0x0D
        case UInt8(ascii: "t"): unescaped = 0x09
        case UInt8(ascii: "u"):
            try parseUnicodeEscape()
            return
        default:
            throw syntax("invalid escape sequence '\\\(describeRaw(base[index + 1]))'", at: start)
        }
        scratch.append(unescaped)
        index += 2
    }

    /// Decodes `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair, at `index` into `scratch` as UTF-8.
    private mutating func parseUnicodeEscape() throws(JSONError) {
        let start = index
        let unit = try hex4(at: start + 2)
        var scalarValue = UInt32(unit)
        index = start + 6
        if (0xDC00...0xDFFF).contains(unit) {
            throw syntax("unpaired low surrogate \\u\(String(unit, radix: 16, uppercase: true)) in string", at: start)
        }
        if (0xD800...0xDBFF).contains(unit) {
            guard index + 1 < count, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u"),
                case let low = try hex4(at: index + 2), (0xDC00...0xDFFF).contains(low)
            else {
                throw syntax("unpaired high surrogate \\u\(String(unit, radix: 16, uppercase: true)) in string", at: start)
            }
            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            index += 6
        }
        // Surrogates were handled above, so this always succeeds.
        let scalar = Unicode.Scalar(scalarValue) ?? "\u{FFFD}"
        for byte in UTF8.encode(scalar)! { scratch.append(byte) }
    }

    private func hex4(at position: Int) throws(JSONError) -> UInt16 {
        guard position + 4 <= count else { throw syntax("invalid \\u escape: expected 4 hex digits", at: position - 2) }
        var value: UInt16 = 0
        for k in 0..<4 {
            let byte = base[position + k]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw syntax("invalid \\u escape: expected 4 hex digits", at: position - 2)
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// Steps over one multi-byte UTF-8 sequence at `index`.
    private mutating func skipUTF8Sequence() throws(JSONError) {
        guard let length = utf8SequenceLength(base, at: index, count: count) else {
            throw syntax("invalid UTF-8", at: index)
        }
        index += length
    }

    // MARK: Helpers

    @inline(__always)
    mutating func skipWhitespace() {
        while index < count {
            switch base[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private func syntax(_ problem: String, at offset: Int) -> JSONError {
        JSONError(.syntax, "\(problem) at byte \(offset)", offset: offset)
    }

    /// "expected X, found Y at byte N", for the byte at `index`.
    private func expected(_ what: String) -> JSONError {
        let found = index < count ? describe(base[index]) : "end of input"
        return syntax("expected \(what), found \(found)", at: index)
    }

    private func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21..<0x7F: "'\(Character(Unicode.Scalar(byte)))'"
        case 0x20: "space"
        default: "byte 0x\(byte < 0x10 ? "0" : "")\(String(byte, radix: 16, uppercase: true))"
        }
    }

    private func describeRaw(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(Character(Unicode.Scalar(byte))) : "\\x\(String(byte, radix: 16))"
    }
}

/// The length of the well-formed multi-byte UTF-8 sequence starting at `base[index]`, or `nil` if it is
/// not one. Rejects overlong forms, encoded surrogates, values above U+10FFFF and truncation (the
/// well-formed byte sequences of Unicode §3.9, table 3-7). Shared by the text parser and binary reader.
@inline(__always)
func utf8SequenceLength(_ base: UnsafePointer<UInt8>, at index: Int, count: Int) -> Int? {
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    let continuations: Int
    switch base[index] {
    case 0xC2...0xDF: continuations = 1
    case 0xE0: continuations = 2; low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: continuations = 2
    case 0xED: continuations = 2; high = 0x9F
    case 0xF0: continuations = 3; low = 0x90
    case 0xF1...0xF3: continuations = 3
    case 0xF4: continuations = 3; high = 0x8F
    default: return nil
    }
    guard index + continuations < count else { return nil }
    let second = base[index + 1]
    guard second >= low, second <= high else { return nil }
    if continuations >= 2, base[index + 2] & 0xC0 != 0x80 { return nil }
    if continuations == 3, base[index + 3] & 0xC0 != 0x80 { return nil }
    return continuations + 1
}

/// A String holding a copy of `utf8`. Measured cheaper than `String(decoding:as:)` for the short
/// strings that dominate keys and values (it builds small strings in place).
@inline(__always)
func makeString(utf8 buffer: UnsafeBufferPointer<UInt8>) -> String {
    String(unsafeUninitializedCapacity: buffer.count) { target in
        _ = target.initialize(fromContentsOf: buffer)
        return buffer.count
    }
}

/// A mask whose lowest set bit is the high bit of the first byte of `word` (in memory order) that a
/// string scan must stop at: a quote, a backslash, a control character or a non-ASCII byte; zero when
/// there is none. Bits above the first flagged byte may be false positives, so only the lowest is
/// used. Bit tricks from "Bit Twiddling Hacks" (haszero, hasless).
@inline(__always)
private func attentionMask(_ word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    @inline(__always) func zeroBytes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highBits }
    let quote = zeroBytes(word ^ (ones &* UInt64(UInt8(ascii: "\""))))
    let backslash = zeroBytes(word ^ (ones &* UInt64(UInt8(ascii: "\\"))))
    let control = (word &- ones &* 0x20) & ~word & highBits  // bytes below 0x20
    return quote | backslash | control | (word & highBits)
}
