/// The members of a JSON object: keys, each once, with their values, in no particular order (every
/// serialization sorts them, see ``JSONValue``).
///
/// Most objects a store meets are small: an action's payload (`{path, value}`), a user's record,
/// a patch operation. A `Dictionary` hashes every key it stores or looks up with SipHash, seeded
/// and finalized per key, and allocates a table with a bitmap: decoding a payload, reading its two
/// members and freeing it cost about twice what the same in an array costs. So the members are an
/// array of entries, found by comparing keys in turn (as `String`s: canonically equivalent
/// spellings are one key, as in a `Dictionary`), and only an object past ``indexedFromCount``
/// members also keeps a table of where each key is (``KeyPositions``). Removing a member moves
/// the last one into its place.
public struct JSONObject: Sendable {
    public typealias Element = (key: String, value: JSONValue)

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var key: String
        @usableFromInline var value: JSONValue

        @inlinable init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    @usableFromInline var entries: [Entry]
    /// Each key's position in ``entries`` once there were more than ``indexedFromCount`` (empty
    /// before, and again only when the object is).
    @usableFromInline var positions: KeyPositions

    /// Past this many members, keys are found through a table rather than compared in turn.
    @usableFromInline static let indexedFromCount = 12

    @inlinable public init() {
        entries = []
        positions = KeyPositions()
    }

    /// An empty object with room for `minimumCapacity` members.
    @inlinable public init(minimumCapacity: Int) {
        entries = []
        entries.reserveCapacity(minimumCapacity)
        positions = KeyPositions()
    }

    /// An object of `members`, whose keys must differ (as `Dictionary(uniqueKeysWithValues:)`).
    public init(uniqueKeysWithValues members: some Sequence<(String, JSONValue)>) {
        self.init()
        for (key, value) in members {
            precondition(updateValue(value, forKey: key) == nil, "JSONObject(uniqueKeysWithValues:): the key \"\(key)\" is repeated")
        }
    }

    /// An object of a dictionary's members.
    public init(_ dictionary: [String: JSONValue]) {
        self.init(minimumCapacity: dictionary.count)
        for (key, value) in dictionary { appendNew(key, value) }
    }

    /// The members as a dictionary.
    public var dictionary: [String: JSONValue] {
        Dictionary(uniqueKeysWithValues: entries.lazy.map { ($0.key, $0.value) })
    }

    @inlinable public var count: Int { entries.count }
    @inlinable public var isEmpty: Bool { entries.isEmpty }

    /// The position of `key`'s member, or `nil`.
    @inlinable public func index(forKey key: String) -> Int? {
        if !positions.isEmpty { return positions.position(of: key, in: entries) }
        return entries.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where buffer[index].key == key { return index }
            return nil
        }
    }

    /// The value of `key`'s member; `nil` when there is none. Setting `nil` removes the member.
    @inlinable public subscript(key: String) -> JSONValue? {
        get {
            guard let index = index(forKey: key) else { return nil }
            return entries[index].value
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// The value of `key`'s member, or `defaultValue` (which setting adds).
    @inlinable public subscript(key: String, default defaultValue: @autoclosure () -> JSONValue) -> JSONValue {
        get { self[key] ?? defaultValue() }
        set { updateValue(newValue, forKey: key) }
    }

    /// The member at a position from ``index(forKey:)`` (``subscript(valueAt:)`` edits its value).
    @inlinable public subscript(position index: Int) -> Element {
        (entries[index].key, entries[index].value)
    }

    /// The value at a position from ``index(forKey:)``, to read or edit in place.
    @inlinable public subscript(valueAt index: Int) -> JSONValue {
        get { entries[index].value }
        _modify { yield &entries[index].value }
        set { entries[index].value = newValue }
    }

    /// Sets `key`'s value; returns the value it replaced, `nil` when the member is new.
    @inlinable @discardableResult
    public mutating func updateValue(_ value: JSONValue, forKey key: String) -> JSONValue? {
        if let index = index(forKey: key) {
            let old = entries[index].value
            entries[index].value = value
            return old
        }
        appendNew(key, value)
        return nil
    }

    /// Removes `key`'s member; returns its value, `nil` when there was none.
    @inlinable @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let index = index(forKey: key) else { return nil }
        return remove(at: index).value
    }

    /// Removes the member at a position from ``index(forKey:)`` (the last member takes its place).
    @inlinable @discardableResult
    public mutating func remove(at index: Int) -> Element {
        let removed = entries[index]
        let last = entries.count - 1
        if !positions.isEmpty { positions.remove(removed.key, at: index) }
        if index != last {
            entries.swapAt(index, last)
            if !positions.isEmpty { positions.move(entries[index].key, from: last, to: index) }
        }
        entries.removeLast()
        if entries.isEmpty { positions = KeyPositions() }
        return (removed.key, removed.value)
    }

    /// Adds a member whose key is not there.
    @inlinable
    mutating func appendNew(_ key: String, _ value: JSONValue) {
        entries.append(Entry(key: key, value: value))
        if !positions.isEmpty {
            positions.insert(key, at: entries.count - 1, count: entries.count)
        } else if entries.count > Self.indexedFromCount {
            // Room for what the entries have room for: a decoder reserves an object's count.
            positions = KeyPositions(entries, capacity: Swift.max(entries.capacity, entries.count))
        }
    }

    public mutating func reserveCapacity(_ minimumCapacity: Int) {
        entries.reserveCapacity(minimumCapacity)
        if !positions.isEmpty { positions.reserveCapacity(minimumCapacity) }
    }

    /// Copies the storage when another object shares it (the values themselves stay shared).
    public mutating func unshareStorage() {
        entries.reserveCapacity(entries.capacity)
        if !positions.isEmpty { positions.unshareStorage() }
    }

    public mutating func removeAll() {
        entries.removeAll()
        positions = KeyPositions()
    }

    /// The keys, in the members' order.
    public var keys: some Collection<String> { entries.lazy.map(\.key) }
    /// The values, in the members' order.
    public var values: some Collection<JSONValue> { entries.lazy.map(\.value) }

    /// The same keys with each value transformed.
    public func mapValues(_ transform: (JSONValue) throws -> JSONValue) rethrows -> JSONObject {
        var result = self
        for index in result.entries.indices { result.entries[index].value = try transform(result.entries[index].value) }
        return result
    }

    /// The members for which `isIncluded` holds.
    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> JSONObject {
        var result = JSONObject()
        for entry in entries where try isIncluded((entry.key, entry.value)) { result.appendNew(entry.key, entry.value) }
        return result
    }

    /// Adds `other`'s members, resolving a key both have with `combine` (old value, new value).
    public mutating func merge(_ other: some Sequence<(key: String, value: JSONValue)>, uniquingKeysWith combine: (JSONValue, JSONValue) throws -> JSONValue) rethrows {
        for (key, value) in other {
            if let index = index(forKey: key) {
                entries[index].value = try combine(entries[index].value, value)
            } else {
                appendNew(key, value)
            }
        }
    }
}

extension JSONObject: Sequence {
    public struct Iterator: IteratorProtocol {
        @usableFromInline var base: IndexingIterator<[Entry]>
        @inlinable init(_ base: IndexingIterator<[Entry]>) { self.base = base }
        @inlinable public mutating func next() -> Element? {
            guard let entry = base.next() else { return nil }
            return (entry.key, entry.value)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(entries.makeIterator()) }
    @inlinable public var underestimatedCount: Int { entries.count }
}

extension JSONObject: Equatable {
    /// The same keys with equal values, whatever their order. Two objects that share their
    /// storage (successive versions of a state do, below what an edit changed) are equal at once,
    /// as `Array`s and `Dictionary`s are: a diff skips such a subtree without walking it.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.sharesStorage(with: rhs) { return true }
        for entry in lhs.entries {
            guard let other = rhs[entry.key], other == entry.value else { return false }
        }
        return true
    }
}

extension JSONObject {
    /// Whether both hold the same storage (so the same members): a copy not edited since.
    func sharesStorage(with other: JSONObject) -> Bool {
        entries.sharesStorage(with: other.entries)
    }
}

extension Array {
    /// Whether both hold the same non-empty buffer (so the same elements): a copy not edited since.
    func sharesStorage(with other: [Element]) -> Bool {
        !isEmpty && withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// A literal's last value for a key wins, as `JSONValue`'s literal always did.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements { updateValue(value, forKey: key) }
    }
}

extension JSONObject: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { JSONValue.object(self).description }
    public var debugDescription: String { description }
}
