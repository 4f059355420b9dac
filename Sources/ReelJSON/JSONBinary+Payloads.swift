// Payloads of the stock actions read from Reel's binary encoding straight into what the reducer
// applies, without building their JSON form first.
//
// A logged `patch` of one operation decoded into a `JSONValue` allocates an array, an object and
// its members' strings, which the reducer then reads into a `JSONPatch` (a second array, the
// pointer's tokens) and which are freed after: more than half of replaying the action. Read here,
// only the patch is made. These readers take only the plain shapes (ASCII keys, each one they
// know at most once) and give up on anything else, where the caller reads the payload the
// ordinary way, which reads it or says what is wrong with it: so they never accept what that way
// refuses, and never need to word an error.

extension BinaryReader {
    /// Reads an object of at most `maxMembers` members whose keys `index` knows (giving a number
    /// below 64), each at most once, calling `member` for each with that number and the reader at
    /// its value, which `member` reads whole.
    ///
    /// - Returns: `false`, the reader left anywhere in the object, when there is no object here, a
    ///   key is not one `index` knows or repeats, or `member` returns `false`.
    mutating func readObject(
        maxMembers: Int, depth: Int, maxDepth: Int, index: (UnsafeBufferPointer<UInt8>) -> Int?,
        _ member: (inout BinaryReader, Int) throws(JSONError) -> Bool
    ) throws(JSONError) -> Bool {
        guard depth < maxDepth, try readUInt8() == BinaryTag.object else { return false }
        let memberCount = try readVarint()
        guard memberCount <= UInt64(maxMembers) else { return false }
        var seen: UInt64 = 0
        for _ in 0..<memberCount {
            let (key, _) = try readUTF8()
            guard let number = index(key), seen & (1 << number) == 0 else { return false }
            seen |= 1 << number
            guard try member(&self, number) else { return false }
        }
        return true
    }

    /// Reads a string that is a JSON Pointer; `nil` when there is no string here or it is no pointer.
    mutating func readPointer() throws(JSONError) -> JSONPointer? {
        guard try readUInt8() == BinaryTag.string else { return nil }
        let (utf8, _) = try readUTF8()
        return try? JSONPointer(validUTF8: utf8)
    }

    /// Reads a string and gives what `index` makes of its bytes; `nil` when there is no string here.
    mutating func readString<T>(_ index: (UnsafeBufferPointer<UInt8>) -> T?) throws(JSONError) -> T? {
        guard try readUInt8() == BinaryTag.string else { return nil }
        return index(try readUTF8().utf8)
    }
}

/// Whether `bytes` spell `name` (``JSONShapeReader/key(_:is:)``).
private func spells(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
    JSONShapeReader.key(UnsafeRawBufferPointer(bytes), is: name)
}

extension JSONPatch {
    /// The number of an operation's member: `from`, `op`, `path`, `value`.
    private static func member(_ key: UnsafeBufferPointer<UInt8>) -> Int? {
        switch key.count {
        case 2: spells(key, "op") ? 1 : nil
        case 4: spells(key, "from") ? 0 : spells(key, "path") ? 2 : nil
        case 5: spells(key, "value") ? 3 : nil
        default: nil
        }
    }

    /// The number of an op's name, in the order of ``Operation``'s cases.
    private static func op(_ name: UnsafeBufferPointer<UInt8>) -> Int? {
        switch name.count {
        case 3: spells(name, "add") ? 0 : nil
        case 4: spells(name, "move") ? 3 : spells(name, "copy") ? 4 : spells(name, "test") ? 5 : nil
        case 6: spells(name, "remove") ? 1 : nil
        case 7: spells(name, "replace") ? 2 : nil
        default: nil
        }
    }

    /// The patch whose JSON form `bytes` hold in Reel's binary encoding, read without building
    /// that form: where this gives a patch, it is `JSONPatch(JSONValue(binary: bytes))`.
    ///
    /// `nil` for anything else than exactly one array of operation objects whose members are
    /// only `op`, `path`, `from` and `value`, each a valid pointer where one is due and every
    /// member its op needs present, and for damaged bytes: the caller then reads the payload the
    /// ordinary way, which reads the other shapes and words the errors.
    public init?(binary bytes: UnsafeRawBufferPointer) {
        var reader = BinaryReader(bytes)
        guard let operations = try? Self.operations(&reader), reader.isAtEnd else { return nil }
        self.init(operations)
    }

    private static func operations(_ reader: inout BinaryReader) throws(JSONError) -> [Operation]? {
        let maxDepth = 512  // as `readJSON()` reads a payload
        guard try reader.readUInt8() == BinaryTag.array else { return nil }
        let count = try reader.readVarint()
        // Each operation takes at least a byte: a damaged count cannot reserve a huge array.
        guard count <= UInt64(reader.remaining) else { return nil }
        var operations: [Operation] = []
        operations.reserveCapacity(Int(count))
        for _ in 0..<count {
            var name: Int?, path: JSONPointer?, from: JSONPointer?, value: JSONValue?
            let read = try reader.readObject(maxMembers: 4, depth: 1, maxDepth: maxDepth, index: member) {
                (reader, member) throws(JSONError) -> Bool in
                switch member {
                case 0: from = try reader.readPointer()
                case 1: name = try reader.readString(op)
                case 2: path = try reader.readPointer()
                default: value = try reader.readValue(depth: 2, maxDepth: maxDepth)
                }
                return member == 3 || (member == 1 ? name != nil : member == 0 ? from != nil : path != nil)
            }
            guard read, let name, let path else { return nil }
            switch name {
            case 0: guard let value else { return nil }; operations.append(.add(path: path, value: value))
            case 1: operations.append(.remove(path: path))
            case 2: guard let value else { return nil }; operations.append(.replace(path: path, value: value))
            case 3: guard let from else { return nil }; operations.append(.move(from: from, path: path))
            case 4: guard let from else { return nil }; operations.append(.copy(from: from, path: path))
            default: guard let value else { return nil }; operations.append(.test(path: path, value: value))
            }
        }
        return operations
    }
}

/// A payload object of a `path` (a JSON Pointer) and at most one other member, as the stock
/// `set` (`value`) and `increment` (`by`) carry, read from Reel's binary encoding without
/// building the object.
public struct BinaryPathPayload: Sendable {
    /// The `path` member.
    public var path: JSONPointer
    /// The other member, `nil` when it is absent.
    public var member: JSONValue?

    /// The payload `bytes` hold; `nil` unless they are exactly one object of a `path` that is a
    /// valid pointer and at most one other member, named `name` (ASCII), or when they are
    /// damaged: the caller then reads the payload the ordinary way.
    public init?(binary bytes: UnsafeRawBufferPointer, member name: StaticString) {
        var reader = BinaryReader(bytes)
        var path: JSONPointer?
        var member: JSONValue?
        let found = { (key: UnsafeBufferPointer<UInt8>) -> Int? in spells(key, "path") ? 0 : spells(key, name) ? 1 : nil }
        guard
            let read = try? reader.readObject(maxMembers: 2, depth: 0, maxDepth: 512, index: found, { (reader, index) throws(JSONError) -> Bool in
                if index == 0 {
                    path = try reader.readPointer()
                    return path != nil
                }
                member = try reader.readValue(depth: 1, maxDepth: 512)
                return true
            }), read, reader.isAtEnd, let path
        else { return nil }
        self.path = path
        self.member = member
    }
}
