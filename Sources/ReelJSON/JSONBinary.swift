// Reel's binary encoding of JSONValue, for the LMDB log and checkpoints.
//
// FORMAT (stored on disk — tag numbers are never reused or renumbered; new kinds get new tags).
// The log keeps the format version elsewhere, so no version byte is written here.
//
//   value  := tag payload
//   0x00   null
//   0x01   false
//   0x02   true
//   0x03   int     signed varint (zigzag, then LEB128)
//   0x04   double  8 bytes, IEEE 754 bit pattern, little-endian
//   0x05   string  varint byte count, then that many bytes of UTF-8
//   0x06   array   varint element count, then the elements
//   0x07   object  varint member count, then per member: key (varint byte count + UTF-8), value
//
// varint: unsigned LEB128, 7 bits per byte, low group first, high bit set on all but the last byte;
// at most 10 bytes, and always the shortest form (no trailing 0x80 … 0x00 padding).
// Writers emit object members in ascending order of the UTF-8 bytes of their keys, so equal values
// give identical bytes and a hash over them is stable. Readers accept any order but reject a
// repeated key, invalid UTF-8, an unknown tag, truncation and nesting beyond their depth limit.

extension Array where Element == UInt8 {
    /// Appends `count` zero bytes: room that a writer through a pointer fills next. (Copied from a
    /// block of zeros: appended from `repeatElement(0, count:)`, they were written one at a time,
    /// 7% of `reel import`'s decoding thread.)
    @inlinable public mutating func appendZeros(_ count: Int) {
        var left = count
        while left > 0 {
            let chunk = Swift.min(left, zeroBlock.count)
            append(contentsOf: UnsafeRawBufferPointer(rebasing: zeroBlock[..<chunk]))
            left -= chunk
        }
    }
}

/// Zeros to copy from (``Swift/Array/appendZeros(_:)``); never written.
@usableFromInline nonisolated(unsafe) let zeroBlock: UnsafeRawBufferPointer = {
    let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64)
    block.initializeMemory(as: UInt8.self, repeating: 0)
    return UnsafeRawBufferPointer(block)
}()

/// Appends Reel's binary encoding (see the format at the top of `JSONBinary.swift`) to a byte array.
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// Creates an empty writer.
    /// - Parameter capacity: Bytes to reserve up front, to avoid regrowing for a known size.
    public init(reservingCapacity capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends one byte.
    public mutating func writeUInt8(_ value: UInt8) {
        bytes.append(value)
    }

    /// Appends `value` as an unsigned LEB128 varint (1 to 10 bytes).
    public mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends `value` zigzag-encoded as a varint, so small negative numbers stay short.
    public mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends `value` as 8 big-endian bytes, for keys whose byte order must match numeric order
    /// (LMDB compares keys bytewise).
    public mutating func writeFixedUInt64BigEndian(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends the IEEE 754 bit pattern of `value` as 8 little-endian bytes; every Double, NaN
    /// included, reads back bit for bit.
    public mutating func writeDouble(_ value: Double) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends `data` as it is, with no length; the reader must know the count.
    public mutating func writeBytes(_ data: some Sequence<UInt8>) {
        bytes.append(contentsOf: data)
    }

    /// Appends `string` as its UTF-8 byte count (varint) followed by the bytes.
    public mutating func writeString(_ string: String) {
        // Through a buffer of the bytes (in place for a native string, on the stack for a small
        // one): appending `string.utf8` copied them through the generic sequence path, a tenth of
        // encoding an action's record.
        var string = string
        string.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }
}

/// Reads Reel's binary encoding (see the format at the top of `JSONBinary.swift`) from a buffer.
///
/// The reader does not own the buffer: it must stay valid while the reader is used (for example an
/// LMDB value inside its read transaction). Every read checks bounds and throws
/// `JSONError` with code `.corruptBinary` rather than reading past the end.
public struct BinaryReader {
    @usableFromInline let base: UnsafeRawPointer?
    /// The number of bytes in the buffer.
    public let count: Int
    /// The offset of the next byte to read.
    public var position: Int { offset }
    /// ``position``, which the inlined reads move.
    @usableFromInline var offset = 0

    /// Creates a reader positioned at the start of `buffer`.
    public init(_ buffer: UnsafeRawBufferPointer) {
        base = buffer.baseAddress
        count = buffer.count
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { position == count }

    /// The number of bytes not read yet.
    public var remaining: Int { count - position }

    /// Reads one byte.
    /// - Throws: `.corruptBinary` at the end of the buffer.
    @inlinable @inline(__always)
    public mutating func readUInt8() throws(JSONError) -> UInt8 {
        guard offset < count, let base else { throw truncatedByte() }
        defer { offset += 1 }
        return base.load(fromByteOffset: offset, as: UInt8.self)
    }

    @usableFromInline func truncatedByte() -> JSONError { truncated("a byte") }

    /// Reads an unsigned LEB128 varint.
    /// - Throws: `.corruptBinary` when it is truncated, longer than 10 bytes, overflows 64 bits, or is
    ///   not in its shortest form.
    @inlinable @inline(__always)
    public mutating func readVarint() throws(JSONError) -> UInt64 {
        // The common case, one byte, inlined into every reader of counts, lengths and header
        // fields (a call each was a fourteenth of a replay); the rest out of line.
        if offset < count, let base {
            let byte = base.load(fromByteOffset: offset, as: UInt8.self)
            if byte < 0x80 {
                offset += 1
                return UInt64(byte)
            }
        }
        return try readLongVarint()
    }

    /// ``readVarint()`` of more than one byte, or at the end.
    @usableFromInline mutating func readLongVarint() throws(JSONError) -> UInt64 {
        guard position < count, let base else { throw truncated("a varint") }
        let start = position
        var byte = base.load(fromByteOffset: position, as: UInt8.self)
        offset += 1

        var result = UInt64(byte & 0x7F)
        var shift: UInt64 = 7
        while true {
            guard position < count else { throw truncated("a varint") }
            byte = base.load(fromByteOffset: position, as: UInt8.self)
            offset += 1
            // The 10th byte may only carry bit 63.
            if shift == 63 && byte > 1 { throw corrupt("varint overflows 64 bits", at: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                if byte == 0 { throw corrupt("varint is not in its shortest form", at: start) }
                return result
            }
            shift += 7
        }
    }

    /// Reads a zigzag-encoded signed varint.
    /// - Throws: `.corruptBinary` as ``readVarint()`` does.
    @inlinable @inline(__always)
    public mutating func readSignedVarint() throws(JSONError) -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// Reads 8 big-endian bytes written by `BinaryWriter.writeFixedUInt64BigEndian(_:)`.
    /// - Throws: `.corruptBinary` when fewer than 8 bytes remain.
    public mutating func readFixedUInt64BigEndian() throws(JSONError) -> UInt64 {
        guard count - position >= 8, let base else { throw truncated("a 64-bit integer") }
        defer { offset += 8 }
        return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// Reads a Double from its 8-byte little-endian bit pattern.
    /// - Throws: `.corruptBinary` when fewer than 8 bytes remain.
    public mutating func readDouble() throws(JSONError) -> Double {
        guard count - position >= 8, let base else { throw truncated("a double") }
        defer { offset += 8 }
        return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self)))
    }

    /// Reads a string written by `BinaryWriter.writeString(_:)`.
    /// - Throws: `.corruptBinary` when it is truncated or not valid UTF-8.
    public mutating func readString() throws(JSONError) -> String {
        try readStringNotingASCII().string
    }

    /// ``readString()``, whether every byte of the string is ASCII, and its bytes in the buffer.
    mutating func readStringNotingASCII() throws(JSONError) -> (string: String, isASCII: Bool, utf8: UnsafeBufferPointer<UInt8>) {
        let (utf8, isASCII) = try readUTF8()
        return (makeString(utf8: utf8), isASCII, utf8)
    }

    /// The bytes of a string (its length, then valid UTF-8) in the buffer, and whether they are
    /// all ASCII, read without making a `String` of them.
    mutating func readUTF8() throws(JSONError) -> (utf8: UnsafeBufferPointer<UInt8>, isASCII: Bool) {
        let length = try readVarint()
        guard length <= UInt64(count - position), let base else { throw truncated("a string") }
        // Validated here rather than with String(validating:as:), whose generic path looks up type
        // metadata on every call and was half the cost of decoding a small payload.
        let utf8 = UnsafeBufferPointer(start: (base + position).assumingMemoryBound(to: UInt8.self), count: Int(length))
        var index = 0
        // ASCII eight bytes at a time; keys and most values are ASCII.
        while index + 8 <= utf8.count,
            UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0
        {
            index += 8
        }
        var isASCII = true
        while index < utf8.count {
            if utf8[index] < 0x80 {
                index += 1
            } else if let sequence = utf8SequenceLength(utf8.baseAddress!, at: index, count: utf8.count) {
                index += sequence
                isASCII = false
            } else {
                throw corrupt("string is not valid UTF-8", at: position + index)
            }
        }
        offset += Int(length)
        return (utf8, isASCII)
    }

    /// Moves past `byteCount` raw bytes (read where they lie, through the buffer the reader reads).
    /// - Throws: `.corruptBinary` when fewer bytes remain.
    public mutating func skip(_ byteCount: Int) throws(JSONError) {
        guard byteCount >= 0, byteCount <= count - position else { throw truncated("\(byteCount) bytes") }
        offset += byteCount
    }

    /// Reads `byteCount` raw bytes into a new array.
    /// - Throws: `.corruptBinary` when fewer bytes remain.
    public mutating func readBytes(count byteCount: Int) throws(JSONError) -> [UInt8] {
        guard byteCount >= 0, byteCount <= count - position else { throw truncated("\(byteCount) bytes") }
        guard byteCount > 0, let base else { return [] }
        defer { offset += byteCount }
        return Array(UnsafeRawBufferPointer(start: base + position, count: byteCount))
    }

    /// Reads one value written by `BinaryWriter.writeJSON(_:)`.
    /// - Parameter maxDepth: How many arrays and objects may nest inside each other.
    /// - Throws: `.corruptBinary` on truncation, an unknown tag, a bad varint, invalid UTF-8, a repeated
    ///   object key, or nesting deeper than `maxDepth`.
    public mutating func readJSON(maxDepth: Int = 512) throws(JSONError) -> JSONValue {
        try readValue(depth: 0, maxDepth: maxDepth)
    }

    mutating func readValue(depth: Int, maxDepth: Int) throws(JSONError) -> JSONValue {
        let start = position
        switch try readUInt8() {
        case BinaryTag.null: return .null
        case BinaryTag.false: return .bool(false)
        case BinaryTag.true: return .bool(true)
        case BinaryTag.int: return .int(try readSignedVarint())
        case BinaryTag.double:
            // Parsing never makes a NaN or an infinity, and the Codable bridge refuses them: in
            // stored JSON one is damage (JSON has no such number, so it would be served as null).
            let value = try readDouble()
            guard value.isFinite else { throw corrupt("a number that is not finite", at: start) }
            return .double(value)
        case BinaryTag.string: return .string(try readString())
        case BinaryTag.array:
            guard depth < maxDepth else { throw corrupt("nesting deeper than \(maxDepth) levels", at: start) }
            let elementCount = try readVarint()
            // Each element takes at least one byte: a corrupt count cannot make us reserve a huge array.
            guard elementCount <= UInt64(count - position) else { throw truncated("an array") }
            var elements: [JSONValue] = []
            elements.reserveCapacity(Int(elementCount))
            for _ in 0..<elementCount {
                elements.append(try readValue(depth: depth + 1, maxDepth: maxDepth))
            }
            return .array(elements)
        case BinaryTag.object:
            guard depth < maxDepth else { throw corrupt("nesting deeper than \(maxDepth) levels", at: start) }
            let memberCount = try readVarint()
            // Each member takes at least two bytes (key length, value tag).
            guard memberCount <= UInt64(count - position) / 2 else { throw truncated("an object") }
            var members = JSONObject(minimumCapacity: Int(memberCount))
            // Written in canonical order (ascending UTF-8 bytes), each key is greater than every
            // key before it, so new without a lookup — while every key is ASCII: ASCII keys are
            // equal only when their bytes are, where another key may be canonically equivalent
            // to one of other bytes (U+212A KELVIN SIGN and "K"), which `String` counts as equal.
            // Once a key breaks that order or is not ASCII, each later one is looked up. Keys are
            // compared as the bytes in the buffer, not as the strings made of them.
            var greatest: UnsafeBufferPointer<UInt8>?
            for index in 0..<memberCount {
                let keyStart = position
                let (key, isASCII, keyBytes) = try readStringNotingASCII()
                let value = try readValue(depth: depth + 1, maxDepth: maxDepth)
                if isASCII, let last = greatest, last.lexicographicallyPrecedes(keyBytes) {
                    members.appendNew(key, value)
                    greatest = keyBytes
                } else {
                    if members.updateValue(value, forKey: key) != nil {
                        throw corrupt("object repeats the key \"\(key)\"", at: keyStart)
                    }
                    greatest = index == 0 && isASCII ? keyBytes : nil
                }
            }
            return .object(members)
        case let tag:
            throw corrupt("unknown tag 0x\(String(tag, radix: 16))", at: start)
        }
    }

    func truncated(_ what: String) -> JSONError {
        JSONError(.corruptBinary, "binary JSON is truncated: expected \(what) at byte \(position)", offset: position)
    }

    private func corrupt(_ problem: String, at offset: Int) -> JSONError {
        JSONError(.corruptBinary, "corrupt binary JSON: \(problem) at byte \(offset)", offset: offset)
    }
}

/// The tag bytes of the format. Never renumber or reuse one: logs written with it stay on disk.
enum BinaryTag {
    static let null: UInt8 = 0x00
    static let `false`: UInt8 = 0x01
    static let `true`: UInt8 = 0x02
    static let int: UInt8 = 0x03
    static let double: UInt8 = 0x04
    static let string: UInt8 = 0x05
    static let array: UInt8 = 0x06
    static let object: UInt8 = 0x07
}

extension JSONValue {
    /// This value in Reel's binary encoding (canonical: equal values give identical bytes).
    public func binaryEncoded() -> [UInt8] {
        let size = BinaryWriter.encodedSize(of: self)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var cursor = BinaryCursor(buffer.baseAddress!)
            cursor.writeJSON(self)
            count = size
        }
    }

    /// Decodes a value from Reel's binary encoding; the buffer must hold exactly one value.
    /// - Parameter binary: The encoded bytes. They are only read during the call.
    /// - Throws: `JSONError` with code `.corruptBinary` when the bytes are not exactly one valid value.
    public init(binary: UnsafeRawBufferPointer) throws(JSONError) {
        var reader = BinaryReader(binary)
        let value = try reader.readJSON()
        guard reader.isAtEnd else {
            throw JSONError(
                .corruptBinary,
                "corrupt binary JSON: \(reader.remaining) bytes left over after the value at byte \(reader.position)",
                offset: reader.position)
        }
        self = value
    }

    /// Decodes a value from Reel's binary encoding; the array must hold exactly one value.
    /// - Throws: `JSONError` with code `.corruptBinary` when the bytes are not exactly one valid value.
    public init(binary: [UInt8]) throws(JSONError) {
        self = try binary.withUnsafeBufferPointer { (buffer) throws(JSONError) -> JSONValue in
            try JSONValue(binary: UnsafeRawBufferPointer(buffer))
        }
    }
}

extension BinaryReader {
    /// Reads one value, building only what lies on the way to `tokens`: the value there whole,
    /// each ancestor object with only the member on the way (an empty object where that member is
    /// absent), an ancestor that is not an object whole. Everything else is stepped over, checked
    /// for its structure but not built, so reading one subtree of a large state costs a fraction
    /// of decoding it.
    public mutating func readJSON(keepingOnly tokens: ArraySlice<String>, maxDepth: Int = 512) throws(JSONError) -> JSONValue {
        try readTrimmed(tokens, depth: 0, maxDepth: maxDepth)
    }

    private mutating func readTrimmed(_ tokens: ArraySlice<String>, depth: Int, maxDepth: Int) throws(JSONError) -> JSONValue {
        guard let token = tokens.first, position < count, let base,
            base.load(fromByteOffset: position, as: UInt8.self) == BinaryTag.object
        else { return try readValue(depth: depth, maxDepth: maxDepth) }
        let start = position
        offset += 1
        guard depth < maxDepth else { throw corrupt("nesting deeper than \(maxDepth) levels", at: start) }
        let memberCount = try readVarint()
        guard memberCount <= UInt64(count - position) / 2 else { throw truncated("an object") }
        var kept: JSONValue?
        let wanted = Array(token.utf8)
        for _ in 0..<memberCount {
            // Keys are compared as bytes: only the one on the way becomes a String.
            let keyStart = position
            let length = try readVarint()
            guard length <= UInt64(count - position) else { throw truncated("a string") }
            var matches = Int(length) == wanted.count
            if matches {
                for (offset, byte) in wanted.enumerated() where base.load(fromByteOffset: position + offset, as: UInt8.self) != byte {
                    matches = false
                    break
                }
            }
            offset += Int(length)
            if matches {
                guard kept == nil else { throw corrupt("object repeats the key \"\(token)\"", at: keyStart) }
                kept = try readTrimmed(tokens.dropFirst(), depth: depth + 1, maxDepth: maxDepth)
            } else {
                try skipValue(depth: depth + 1, maxDepth: maxDepth)
            }
        }
        return .object(kept.map { [token: $0] } ?? [:])
    }

    /// Steps over one value.
    private mutating func skipValue(depth: Int, maxDepth: Int) throws(JSONError) {
        let start = position
        switch try readUInt8() {
        case BinaryTag.null, BinaryTag.false, BinaryTag.true: return
        case BinaryTag.int: _ = try readVarint()
        case BinaryTag.double: _ = try readDouble()
        case BinaryTag.string:
            let length = try readVarint()
            guard length <= UInt64(count - position) else { throw truncated("a string") }
            offset += Int(length)
        case BinaryTag.array:
            guard depth < maxDepth else { throw corrupt("nesting deeper than \(maxDepth) levels", at: start) }
            let elementCount = try readVarint()
            guard elementCount <= UInt64(count - position) else { throw truncated("an array") }
            for _ in 0..<elementCount { try skipValue(depth: depth + 1, maxDepth: maxDepth) }
        case BinaryTag.object:
            guard depth < maxDepth else { throw corrupt("nesting deeper than \(maxDepth) levels", at: start) }
            let memberCount = try readVarint()
            guard memberCount <= UInt64(count - position) / 2 else { throw truncated("an object") }
            for _ in 0..<memberCount {
                let length = try readVarint()
                guard length <= UInt64(count - position) else { throw truncated("a string") }
                offset += Int(length)
                try skipValue(depth: depth + 1, maxDepth: maxDepth)
            }
        case let tag:
            throw corrupt("unknown tag 0x\(String(tag, radix: 16))", at: start)
        }
    }
}
