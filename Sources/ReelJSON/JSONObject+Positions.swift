/// Where each key of a large ``JSONObject`` is among its entries: an open-addressed table whose
/// slots pack 32 bits of the key's hash (high half) with its position plus one (low half; zero is
/// an empty slot). Linear probing, at most half full, removal by shifting the probe run back.
///
/// A `Dictionary` from key to position hashed every lookup with SipHash, seeded and finalized per
/// key, and kept a second copy of every key: its lookups were a twentieth of building the change
/// index, which walks objects of a hundred members for most actions. Here a key is hashed eight
/// bytes per multiply (``TokenHash``) and compared with the entry only when the slot's hash bits
/// agree.
///
/// Keys are equal as `String`s are, by canonical equivalence ("\u{212A}" (Kelvin sign) is "K",
/// "e\u{301}" is "é"), so a key is hashed by its NFC form: an ASCII key as it is (ASCII is NFC),
/// any other by the code units the standard library itself compares and hashes strings by.
@usableFromInline
struct KeyPositions: Sendable {
    private var slots: [UInt64]

    /// No table: the object is small, or empty.
    @usableFromInline init() {
        slots = []
    }

    @usableFromInline var isEmpty: Bool { slots.isEmpty }

    /// A table of `entries`' keys (which must differ), with room for `capacity` of them.
    @usableFromInline init(_ entries: [JSONObject.Entry], capacity: Int) {
        var size = 16
        while size < 2 * Swift.max(capacity, entries.count) { size *= 2 }
        slots = Array(repeating: 0, count: size)
        for (position, entry) in entries.enumerated() { place(Self.slot(Self.hash(entry.key), position)) }
    }

    /// The position of `key` among `entries`, or `nil`.
    @usableFromInline func position(of key: String, in entries: [JSONObject.Entry]) -> Int? {
        let hash = Self.hash(key)
        let bits = hash & 0xFFFF_FFFF
        let mask = slots.count - 1
        return slots.withUnsafeBufferPointer { slots in
            entries.withUnsafeBufferPointer { entries in
                var index = Int(bits) & mask
                while true {
                    let slot = slots[index]
                    if slot == 0 { return nil }
                    if slot >> 32 == bits {
                        let position = Int(slot & 0xFFFF_FFFF) - 1
                        if entries[position].key == key { return position }
                    }
                    index = (index + 1) & mask
                }
            }
        }
    }

    /// Adds `key` at `position` (the caller found it absent); `count` keys are then listed.
    @usableFromInline mutating func insert(_ key: String, at position: Int, count: Int) {
        if count * 2 > slots.count { grow(to: count) }
        place(Self.slot(Self.hash(key), position))
    }

    /// Records that `key` moved from position `old` to `new` (the last entry filling a hole).
    @usableFromInline mutating func move(_ key: String, from old: Int, to new: Int) {
        let hash = Self.hash(key)
        let index = self.index(of: Self.slot(hash, old))
        slots[index] = Self.slot(hash, new)
    }

    /// Takes `key`, at `position`, off the table.
    @usableFromInline mutating func remove(_ key: String, at position: Int) {
        let mask = slots.count - 1
        var hole = index(of: Self.slot(Self.hash(key), position))
        slots[hole] = 0
        // Every slot of the probe run after the hole whose home is not between the hole and it
        // moves back into the hole, so that no lookup stops short of it.
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let home = Int(slots[next] >> 32) & mask
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                slots[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    /// Makes room for `count` keys at most half full.
    @usableFromInline mutating func reserveCapacity(_ count: Int) {
        if count * 2 > slots.count { grow(to: count) }
    }

    /// Copies the table when another object shares it.
    @usableFromInline mutating func unshareStorage() {
        slots.reserveCapacity(slots.capacity)
    }

    private mutating func grow(to count: Int) {
        let old = slots
        var size = Swift.max(16, slots.count)
        while size < 2 * count { size *= 2 }
        slots = Array(repeating: 0, count: size)
        for slot in old where slot != 0 { place(slot) }
    }

    private mutating func place(_ slot: UInt64) {
        let mask = slots.count - 1
        var index = Int(slot >> 32) & mask
        while slots[index] != 0 { index = (index + 1) & mask }
        slots[index] = slot
    }

    /// The index of `slot`, which the table holds.
    private func index(of slot: UInt64) -> Int {
        let mask = slots.count - 1
        var index = Int(slot >> 32) & mask
        while slots[index] != slot { index = (index + 1) & mask }
        return index
    }

    private static func slot(_ hash: UInt64, _ position: Int) -> UInt64 {
        (hash & 0xFFFF_FFFF) << 32 | UInt64(position + 1)
    }

    /// The hash of `key`'s NFC form (see the type's comment).
    static func hash(_ key: String) -> UInt64 {
        if let hash = key.utf8.withContiguousStorageIfAvailable({ bytes -> UInt64? in
            isASCII(bytes) ? TokenHash.hash(UnsafeRawBufferPointer(bytes), seed: TokenHash.processSeed) : nil
        }) {
            if let hash { return hash }
        } else {
            var copy = key
            if let hash = copy.withUTF8({ bytes -> UInt64? in
                isASCII(bytes) ? TokenHash.hash(UnsafeRawBufferPointer(bytes), seed: TokenHash.processSeed) : nil
            }) {
                return hash
            }
        }
        var normalized: [UInt8] = []
        normalized.reserveCapacity(key.utf8.count)
        key._withNFCCodeUnits { normalized.append($0) }
        return normalized.withUnsafeBytes { TokenHash.hash($0, seed: TokenHash.processSeed) }
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        var offset = 0
        var bits: UInt64 = 0
        while offset + 8 <= raw.count {
            bits |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < raw.count {
            bits |= UInt64(raw[offset])
            offset += 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }
}
