// JSON text output. The compact form is canonical — members sorted by the UTF-8 bytes of their keys,
// no whitespace, one spelling per number — so equal values give equal bytes, and it never contains a
// raw newline, so it can be written as one line of newline-delimited JSON.

extension JSONValue {
    /// Appends the compact, canonical JSON text of this value to `bytes`.
    ///
    /// Object members are sorted by the UTF-8 bytes of their keys; there is no whitespace; `"`, `\` and
    /// control characters are escaped (so the output never holds a raw newline); `/` and non-ASCII
    /// characters are written as they are. Doubles use their shortest round-trip form (`5.0`, `1e-07`);
    /// non-finite doubles, which parsing never produces, are written as `null`.
    /// - Parameter bytes: The buffer to append UTF-8 text to.
    public func serialize(into bytes: inout [UInt8]) {
        switch self {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let value):
            bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
        case .int(let value):
            appendDecimal(value, to: &bytes)
        case .double(let value):
            appendDouble(value, to: &bytes)
        case .string(let value):
            appendQuoted(value, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                element.serialize(into: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            JSONValue.forEachCanonicallyOrdered(members) { position, key, value in
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                appendQuoted(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                value.serialize(into: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// The compact, canonical JSON text of this value as UTF-8 bytes. See ``serialize(into:)``.
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        serialize(into: &bytes)
        return bytes
    }

    /// The compact, canonical JSON text of this value, as one line. See ``serialize(into:)``.
    public var jsonString: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// JSON text for people: members sorted by key as in the compact form, one element or member per
    /// line, `indent` spaces per level, `": "` between key and value, and `[]` / `{}` for empty containers.
    /// - Parameter indent: Spaces per nesting level.
    /// - Returns: The text, without a trailing newline.
    public func prettyPrinted(indent: Int = 2) -> String {
        var bytes: [UInt8] = []
        appendPretty(to: &bytes, indent: max(0, indent), level: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The members of an object in canonical order: ascending by the UTF-8 bytes of the key. (`String`'s
    /// own `<` compares by Unicode canonical equivalence, which is not a byte order.)
    static func canonicallyOrdered(_ members: JSONObject) -> [(key: String, value: JSONValue)] {
        members.sorted { utf8Precedes($0.key, $1.key) }
    }

    /// Whether `a`'s UTF-8 bytes come before `b`'s, compared as bytes through buffers of them
    /// (`a.utf8.lexicographicallyPrecedes(b.utf8)` walked the two views a byte at a time through
    /// the generic sequence path: a fifth of encoding a small payload).
    @inline(__always)
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = Swift.min(x.count, y.count)
                for index in 0..<common where x[index] != y[index] { return x[index] < y[index] }
                return x.count < y.count
            }
        }
    }

    /// Calls `body` with each member in canonical order (see ``canonicallyOrdered(_:)``) and its
    /// position. An object of a few members, as most actions' payloads are, is ordered by its
    /// indices in stack memory rather than copied into a sorted array: every logged action is
    /// encoded once, and one allocation less for each showed in the write path's profile.
    @inline(__always)
    static func forEachCanonicallyOrdered(
        _ members: JSONObject, _ body: (_ position: Int, _ key: String, _ value: JSONValue) -> Void
    ) {
        let count = members.count
        guard count > 1 else {
            if count == 1 { body(0, members.entries[0].key, members.entries[0].value) }
            return
        }
        guard count <= 16 else {
            for (position, member) in canonicallyOrdered(members).enumerated() { body(position, member.key, member.value) }
            return
        }
        members.entries.withUnsafeBufferPointer { entries in
            // A decoded object's members come in canonical order already: checked in one pass.
            var ordered = true
            for index in 1..<count where !utf8Precedes(entries[index - 1].key, entries[index].key) {
                ordered = false
                break
            }
            if ordered {
                for index in 0..<count { body(index, entries[index].key, entries[index].value) }
                return
            }
            withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { order in
                for index in 0..<count {
                    // Insertion sort by the keys' UTF-8 bytes: at most 16 members.
                    var slot = index
                    while slot > 0, utf8Precedes(entries[index].key, entries[order[slot - 1]].key) {
                        order[slot] = order[slot - 1]
                        slot -= 1
                    }
                    order[slot] = index
                }
                for position in 0..<count { body(position, entries[order[position]].key, entries[order[position]].value) }
            }
        }
    }

    private func appendPretty(to bytes: inout [UInt8], indent: Int, level: Int) {
        func newline(_ level: Int) {
            bytes.append(UInt8(ascii: "\n"))
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * level))
        }
        switch self {
        case .array(let elements) where !elements.isEmpty:
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(level + 1)
                element.appendPretty(to: &bytes, indent: indent, level: level + 1)
            }
            newline(level)
            bytes.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            bytes.append(UInt8(ascii: "{"))
            for (position, member) in JSONValue.canonicallyOrdered(members).enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(level + 1)
                appendQuoted(member.key, to: &bytes)
                bytes.append(contentsOf: ": ".utf8)
                member.value.appendPretty(to: &bytes, indent: indent, level: level + 1)
            }
            newline(level)
            bytes.append(UInt8(ascii: "}"))
        default:
            serialize(into: &bytes)
        }
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact, canonical JSON text (``jsonString``).
    public var description: String { jsonString }
}

/// Writes `value` in decimal without going through `description`, which would build a String.
func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude  // UInt64, so Int64.min needs no special case
    if magnitude < 10 {
        bytes.append(UInt8(ascii: "0") &+ UInt8(magnitude))
        return
    }
    // 20 digits hold UInt64.max; digits are produced backwards, then copied in order.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
        var start = 20
        while magnitude > 0 {
            start -= 1
            digits[start] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
            magnitude /= 10
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
    }
}

private func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
    guard value.isFinite else {
        bytes.append(contentsOf: "null".utf8)
        return
    }
    // Swift prints the shortest text that reads back to the same Double ("5.0", "1e-07", "-0.0",
    // "1e+16"); all of these are valid JSON numbers.
    bytes.append(contentsOf: value.description.utf8)
}

/// Writes `string` as a JSON string literal, copying runs of characters that need no escape in one go.
func appendQuoted(_ string: String, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\""))
    var string = string
    string.withUTF8 { utf8 in
        var runStart = 0
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            runStart = index + 1
            bytes.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            default:
                let hexDigits: StaticString = "0123456789abcdef"
                bytes.append(contentsOf: "u00".utf8)
                bytes.append(hexDigits.utf8Start[Int(byte >> 4)])
                bytes.append(hexDigits.utf8Start[Int(byte & 0xF)])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    }
    bytes.append(UInt8(ascii: "\""))
}
