// JSON text written straight as Reel's binary encoding (the format at the top of
// `JSONBinary.swift`), without a `JSONValue` between: `reel import` turns a million payloads a
// second into log records, and building each payload's tree of values, encoding it and freeing
// it was most of a line's time.
//
// Only plain values are taken: `null`, `true`, `false`, integers without a fraction or an
// exponent that fit in 64 bits (not `-0`), strings of printable ASCII without escapes, and arrays
// and objects of those whose keys are plain too and never repeat. Anything else answers `nil`
// and the caller parses the value the ordinary way (``JSONValue/init(parsing:maxDepth:)`` and
// ``BinaryWriter/writeJSON(_:)``), which reads it or says what is wrong. What is taken comes out
// byte for byte as that way writes it (`JSONBinaryTranscodingTests`), objects' members in
// canonical order.

extension JSONParser {
    /// Appends the binary encoding of the plain value at `index` (see above) to `bytes`, `index`
    /// moved past it: `true`. `false`, with `bytes` as it was and `index` wherever it stopped, for
    /// anything else. `depth` counts the arrays and objects around the value, as
    /// ``parseValue(depth:)``'s.
    mutating func transcodePlainValue(depth: Int, into bytes: inout [UInt8]) -> Bool {
        // A plain value's encoding is never longer than twice its text (a one-digit integer and
        // its comma: two bytes of each), and the value is within what is left of the text.
        let start = bytes.count
        let capacity = 2 * (count - index) + 16
        bytes.appendZeros(capacity)
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int? in
            var output = BinaryOutput(start: buffer.baseAddress! + start)
            guard writePlainValue(depth: depth, into: &output) else { return nil }
            precondition(output.count <= capacity, "a plain value's encoding outgrew its bound")
            return output.count
        }
        bytes.removeLast(capacity - (written ?? 0))
        return written != nil
    }

    private mutating func writePlainValue(depth: Int, into output: inout BinaryOutput) -> Bool {
        guard index < count else { return false }
        switch base[index] {
        case UInt8(ascii: "{"): return writePlainObject(depth: depth + 1, into: &output)
        case UInt8(ascii: "["): return writePlainArray(depth: depth + 1, into: &output)
        case UInt8(ascii: "\""):
            guard let text = plainText() else { return false }
            output.byte(BinaryTag.string)
            output.string(text)
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard let integer = plainInteger() else { return false }
            output.byte(BinaryTag.int)
            output.varint(BinaryWriter.zigzag(integer))
            return true
        case UInt8(ascii: "t"): return literal("true", BinaryTag.true, into: &output)
        case UInt8(ascii: "f"): return literal("false", BinaryTag.false, into: &output)
        case UInt8(ascii: "n"): return literal("null", BinaryTag.null, into: &output)
        default: return false
        }
    }

    private mutating func literal(_ text: StaticString, _ tag: UInt8, into output: inout BinaryOutput) -> Bool {
        do {
            try parseLiteral(text)
        } catch {
            return false
        }
        output.byte(tag)
        return true
    }

    /// Elements after a tag and a one-byte count, the count widened (and the elements moved)
    /// when there are 128 or more.
    private mutating func writePlainArray(depth: Int, into output: inout BinaryOutput) -> Bool {
        guard depth <= maxDepth else { return false }
        index += 1  // '['
        output.byte(BinaryTag.array)
        let countAt = output.count
        output.byte(0)
        var elements = 0
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "]") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard writePlainValue(depth: depth, into: &output) else { return false }
            elements += 1
            skipWhitespace()
            guard index < count else { return false }
            if base[index] == UInt8(ascii: ",") {
                index += 1
            } else if base[index] == UInt8(ascii: "]") {
                index += 1
                output.patchCount(elements, at: countAt)
                return true
            } else {
                return false
            }
        }
    }

    /// Members written as they come; when their keys are not in canonical order already, sorted
    /// afterwards (moved through a copy). A repeated key is left to the ordinary way.
    private mutating func writePlainObject(depth: Int, into output: inout BinaryOutput) -> Bool {
        guard depth <= maxDepth else { return false }
        index += 1  // '{'
        output.byte(BinaryTag.object)
        let countAt = output.count
        output.byte(0)
        skipWhitespace()
        if index < count, base[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        // Each member's start in the output (its key's length varint, then its key and value).
        var starts: [Int] = []
        var previousKey: UnsafeRawBufferPointer?
        var ordered = true
        var members = 0
        while true {
            skipWhitespace()
            guard let key = plainText() else { return false }
            skipWhitespace()
            guard index < count, base[index] == UInt8(ascii: ":") else { return false }
            index += 1
            skipWhitespace()
            if let previousKey, ordered, !Self.precedes(previousKey, key) {
                ordered = false
                // The members so far, found again from the first (their keys' lengths lead them).
                starts = Self.memberStarts(in: output, from: countAt + 1, members: members)
            }
            if !ordered { starts.append(output.count) }
            previousKey = key
            output.string(key)
            guard writePlainValue(depth: depth, into: &output) else { return false }
            members += 1
            skipWhitespace()
            guard index < count else { return false }
            if base[index] == UInt8(ascii: ",") {
                index += 1
            } else if base[index] == UInt8(ascii: "}") {
                index += 1
                break
            } else {
                return false
            }
        }
        if !ordered {
            guard output.sortMembers(starts: starts, from: countAt + 1) else { return false }
        }
        output.patchCount(members, at: countAt)
        return true
    }

    /// Where each of `members` members written from `start` begins (a member: its key as a string,
    /// then its value). Only for members of plain values, whose encodings this reads back.
    private static func memberStarts(in output: BinaryOutput, from start: Int, members: Int) -> [Int] {
        var starts: [Int] = []
        starts.reserveCapacity(members + 8)
        var position = start
        for _ in 0..<members {
            starts.append(position)
            position = output.end(ofStringAt: position)
            position = output.end(ofValueAt: position)
        }
        return starts
    }

    /// Whether key `a` comes before key `b` in canonical order (their UTF-8 bytes), not equal.
    static func precedes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        for offset in 0..<Swift.min(a.count, b.count) where a[offset] != b[offset] { return a[offset] < b[offset] }
        return a.count < b.count
    }

    /// A string of printable ASCII without escapes at `index`, without its quotes, `index` moved
    /// past it; `nil` for any other value. (`JSONShapeReader` reads its keys with it too.)
    mutating func plainText() -> UnsafeRawBufferPointer? {
        guard index < count, base[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end < count {
            let byte = base[end]
            if byte == UInt8(ascii: "\"") {
                index = end + 1
                return UnsafeRawBufferPointer(start: base + start, count: end - start)
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        return nil
    }

    /// An integer at `index` as ``parseValue(depth:)`` reads `.int`s: no fraction, no exponent,
    /// no leading zero, within `Int64`, not `-0`.
    mutating func plainInteger() -> Int64? {
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let digitsStart = index
        // Accumulated as a negative number, as the parser does, so that Int64.min fits.
        var accumulator: Int64 = 0
        while index < count, base[index] &- UInt8(ascii: "0") < 10 {
            let (times10, o1) = accumulator.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(Int64(base[index] &- UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            accumulator = next
            index += 1
        }
        let digits = index - digitsStart
        guard digits > 0, digits == 1 || base[digitsStart] != UInt8(ascii: "0") else { return nil }
        if index < count {
            let next = base[index]
            guard next != UInt8(ascii: "."), next | 0x20 != UInt8(ascii: "e") else { return nil }
        }
        if negative { return accumulator == 0 ? nil : accumulator }
        return accumulator == .min ? nil : -accumulator
    }
}

/// The binary encoding written through a pointer into memory sized for it beforehand.
private struct BinaryOutput {
    let start: UnsafeMutablePointer<UInt8>
    /// Bytes written.
    var count = 0

    mutating func byte(_ value: UInt8) {
        start[count] = value
        count += 1
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    mutating func string(_ text: UnsafeRawBufferPointer) {
        varint(UInt64(text.count))
        if text.count > 0 { (start + count).initialize(from: text.baseAddress!.assumingMemoryBound(to: UInt8.self), count: text.count) }
        count += text.count
    }

    /// Writes `elements` into the one byte reserved at `position`, moving what follows when its
    /// varint needs more.
    mutating func patchCount(_ elements: Int, at position: Int) {
        let size = BinaryWriter.varintSize(UInt64(elements))
        if size > 1 {
            let body = position + 1
            (start + body + size - 1).update(from: start + body, count: count - body)
            count += size - 1
        }
        var cursor = BinaryCursor(start + position)
        cursor.writeVarint(UInt64(elements))
    }

    /// Reorders the members written from `from` (each starting at one of `starts`, in the order
    /// written) into canonical order; `false` when two keys are the same.
    func sortMembers(starts: [Int], from: Int) -> Bool {
        let members = starts.indices.map { index in
            (start: starts[index], end: index + 1 < starts.count ? starts[index + 1] : count)
        }
        let keys = members.map { member in key(at: member.start) }
        let order = members.indices.sorted { JSONParser.precedes(keys[$0], keys[$1]) }
        for position in 1..<order.count where !JSONParser.precedes(keys[order[position - 1]], keys[order[position]]) {
            return false
        }
        let copy = Array(UnsafeBufferPointer(start: start + from, count: count - from))
        var position = from
        copy.withUnsafeBufferPointer { copied in
            for index in order {
                let member = members[index]
                let length = member.end - member.start
                (start + position).update(from: copied.baseAddress! + (member.start - from), count: length)
                position += length
            }
        }
        return true
    }

    /// The bytes of the string written at `position`.
    func key(at position: Int) -> UnsafeRawBufferPointer {
        let (length, at) = varint(at: position)
        return UnsafeRawBufferPointer(start: start + at, count: Int(length))
    }

    /// Where the string written at `position` ends.
    func end(ofStringAt position: Int) -> Int {
        let (length, at) = varint(at: position)
        return at + Int(length)
    }

    /// Where the plain value written at `position` ends.
    func end(ofValueAt position: Int) -> Int {
        let tag = start[position]
        switch tag {
        case BinaryTag.null, BinaryTag.true, BinaryTag.false: return position + 1
        case BinaryTag.int: return varint(at: position + 1).end
        case BinaryTag.string: return end(ofStringAt: position + 1)
        case BinaryTag.array:
            var (elements, at) = varint(at: position + 1)
            while elements > 0 {
                at = end(ofValueAt: at)
                elements -= 1
            }
            return at
        default:  // BinaryTag.object
            var (members, at) = varint(at: position + 1)
            while members > 0 {
                at = end(ofValueAt: end(ofStringAt: at))
                members -= 1
            }
            return at
        }
    }

    private func varint(at position: Int) -> (value: UInt64, end: Int) {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var at = position
        while true {
            let byte = start[at]
            at += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return (value, at) }
            shift += 7
        }
    }
}
