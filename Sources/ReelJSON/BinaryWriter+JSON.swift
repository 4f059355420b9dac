// Writing a JSONValue in Reel's binary encoding (the format at the top of `JSONBinary.swift`):
// its exact size first, then its bytes through a raw pointer into memory of that size. Every
// logged action's payload and every checkpoint's state is written here; appending byte by byte
// to an array checked its capacity and uniqueness at every byte, and an estimate of the size took
// a walk of its own: together most of encoding an action's record.

extension BinaryWriter {
    /// The number of bytes ``writeJSON(_:)`` appends for `value`, exactly.
    public static func encodedSize(of value: JSONValue) -> Int {
        switch value {
        case .null, .bool: return 1
        case .int(let integer): return 1 + varintSize(zigzag(integer))
        case .double: return 9
        case .string(let string): return 1 + stringSize(string)
        case .array(let elements):
            return elements.withUnsafeBufferPointer { buffer in
                var size = 1 + varintSize(UInt64(buffer.count))
                for index in buffer.indices { size += encodedSize(of: buffer[index]) }
                return size
            }
        case .object(let members):
            return members.entries.withUnsafeBufferPointer { entries in
                var size = 1 + varintSize(UInt64(entries.count))
                for index in entries.indices { size += stringSize(entries[index].key) + encodedSize(of: entries[index].value) }
                return size
            }
        }
    }

    /// The bytes of `string` as ``writeString(_:)`` writes it: its length, then its UTF-8.
    @inlinable public static func stringSize(_ string: String) -> Int {
        let count = string.utf8.count
        return varintSize(UInt64(count)) + count
    }

    /// The bytes of `value` as an unsigned LEB128 varint: 1 to 10.
    @inlinable public static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// `value` zigzag-encoded, as ``writeSignedVarint(_:)`` writes it.
    @inlinable public static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    /// Appends the binary encoding of `value`, with object members in canonical (UTF-8 key) order.
    public mutating func writeJSON(_ value: JSONValue) {
        let size = Self.encodedSize(of: value)
        let start = bytes.count
        if bytes.capacity < start + size { bytes.reserveCapacity(Swift.max(start + size, 2 * bytes.capacity)) }
        bytes.appendZeros(size)
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = BinaryCursor(buffer.baseAddress! + start)
            cursor.writeJSON(value)
            precondition(cursor.position == buffer.baseAddress! + start + size, "a value's encoding differs from its size")
        }
    }
}

/// Writes the binary encoding into memory sized for it beforehand (``BinaryWriter/encodedSize(of:)``).
/// `package`: the log's records are written with it too (`EnvelopeCodec`).
package struct BinaryCursor {
    /// Where the next byte goes.
    package private(set) var position: UnsafeMutablePointer<UInt8>

    package init(_ start: UnsafeMutablePointer<UInt8>) {
        position = start
    }

    @inline(__always)
    package mutating func writeByte(_ byte: UInt8) {
        position.initialize(to: byte)
        position += 1
    }

    @inline(__always)
    package mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            writeByte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        writeByte(UInt8(value))
    }

    package mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        if let base = bytes.baseAddress { UnsafeMutableRawPointer(position).copyMemory(from: base, byteCount: bytes.count) }
        position += bytes.count
    }

    package mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            if let base = utf8.baseAddress { position.initialize(from: base, count: utf8.count) }
            position += utf8.count
        }
    }

    package mutating func writeJSON(_ value: JSONValue) {
        switch value {
        case .null: writeByte(BinaryTag.null)
        case .bool(let flag): writeByte(flag ? BinaryTag.true : BinaryTag.false)
        case .int(let integer):
            writeByte(BinaryTag.int)
            writeVarint(BinaryWriter.zigzag(integer))
        case .double(let double):
            writeByte(BinaryTag.double)
            withUnsafeBytes(of: double.bitPattern.littleEndian) { bytes in
                UnsafeMutableRawPointer(position).copyMemory(from: bytes.baseAddress!, byteCount: 8)
            }
            position += 8
        case .string(let string):
            writeByte(BinaryTag.string)
            writeString(string)
        case .array(let elements):
            writeByte(BinaryTag.array)
            writeVarint(UInt64(elements.count))
            elements.withUnsafeBufferPointer { buffer in
                for index in buffer.indices { writeJSON(buffer[index]) }
            }
        case .object(let members):
            writeByte(BinaryTag.object)
            writeVarint(UInt64(members.count))
            JSONValue.forEachCanonicallyOrdered(members) { _, key, value in
                writeString(key)
                writeJSON(value)
            }
        }
    }
}
