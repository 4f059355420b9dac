// Writing JSON text straight into bytes, for types that know their own shape (the protocol's
// results): no `JSONValue` tree is built on the way, which matters on the path of every answer.
// The text is the same canonical text `JSONValue.serialize(into:)` writes for the equal value.

/// A value that writes itself as compact, canonical JSON text.
public protocol JSONWritable {
    /// Appends the value's JSON text to `bytes`.
    func writeJSON(into bytes: inout [UInt8])
}

extension JSONWritable {
    /// The value as a `JSONValue`, for printing (`reel … --json`) and tests; servers write the
    /// bytes instead. What ``writeJSON(into:)`` writes is always JSON text, so it parses.
    public var asJSON: JSONValue {
        var bytes: [UInt8] = []
        writeJSON(into: &bytes)
        return (try? JSONValue(parsing: bytes, maxDepth: .max)) ?? .null
    }
}

extension JSONValue: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) { serialize(into: &bytes) }
}

extension String: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) { appendQuoted(self, to: &bytes) }
}

extension Bool: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) { bytes.append(contentsOf: self ? "true".utf8 : "false".utf8) }
}

extension Int64: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) { appendDecimal(self, to: &bytes) }
}

extension Int: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) { appendDecimal(Int64(self), to: &bytes) }
}

extension UInt64: JSONWritable {
    /// Written as `JSONValue(seq:)` reads it: clamped to `Int64.max`, which no count comes near.
    public func writeJSON(into bytes: inout [UInt8]) { appendDecimal(Int64(clamping: self), to: &bytes) }
}

extension Array: JSONWritable where Element: JSONWritable {
    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "["))
        for (position, element) in enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            element.writeJSON(into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

/// The members of a JSON object being written; see ``Swift/Array/appendJSONObject(_:)``.
///
/// Members must be added in canonical order (keys sorted by their UTF-8 bytes), as
/// `JSONValue.serialize(into:)` writes them, so that equal values give equal bytes whichever way
/// they were written. Debug builds check the order.
public struct JSONObjectMembers {
    fileprivate var bytes: [UInt8] = []
    private var count = 0
    #if DEBUG
    private var lastKey: String?
    #endif

    /// Adds a member.
    public mutating func add(_ key: String, _ value: some JSONWritable) {
        appendKey(key)
        value.writeJSON(into: &bytes)
    }

    /// Adds a member when `value` is not `nil`; leaves it out otherwise.
    public mutating func add(_ key: String, ifPresent value: (some JSONWritable)?) {
        guard let value else { return }
        add(key, value)
    }

    /// Adds a member whose value `write` appends as JSON text (an object of its own, say).
    public mutating func add(_ key: String, writing write: (inout [UInt8]) -> Void) {
        appendKey(key)
        write(&bytes)
    }

    private mutating func appendKey(_ key: String) {
        #if DEBUG
        if let lastKey {
            assert(lastKey.utf8.lexicographicallyPrecedes(key.utf8), "JSON members out of canonical order: '\(key)' after '\(lastKey)'")
        }
        lastKey = key
        #endif
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }
}

extension Array where Element == UInt8 {
    /// Appends a JSON object whose members `body` adds, in canonical order.
    ///
    /// ```swift
    /// bytes.appendJSONObject { members in
    ///     members.add("duplicate", ifPresent: duplicate ? true : nil)
    ///     members.add("seq", seq)
    /// }
    /// ```
    public mutating func appendJSONObject(_ body: (inout JSONObjectMembers) -> Void) {
        var members = JSONObjectMembers()
        // The buffer moves into the writer and back, so it is never copied.
        swap(&members.bytes, &self)
        members.bytes.append(UInt8(ascii: "{"))
        body(&members)
        members.bytes.append(UInt8(ascii: "}"))
        swap(&members.bytes, &self)
    }
}

extension JSONPatch: JSONWritable {
    /// Writes the patch as its RFC 6902 array, the text of ``jsonValue`` without building it.
    public func writeJSON(into bytes: inout [UInt8]) {
        operations.writeJSON(into: &bytes)
    }
}

extension JSONPatch.Operation: JSONWritable {
    /// `{from?, op, path, value?}`, members in canonical order.
    public func writeJSON(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { members in
            switch self {
            case .move(let from, _), .copy(let from, _): members.add("from", from.description)
            case .add, .remove, .replace, .test: break
            }
            members.add("op", name)
            members.add("path", path.description)
            switch self {
            case .add(_, let value), .replace(_, let value), .test(_, let value): members.add("value", value)
            case .move, .copy, .remove: break
            }
        }
    }
}
