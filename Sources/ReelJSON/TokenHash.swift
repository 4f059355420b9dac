/// A keyed hash of short strings for the change index's own tables (``PointerTree`` and the
/// recorder's cache of paths), where a `Dictionary`'s SipHash, seeded and finalized per lookup,
/// was a quarter of building the index: the tokens of a pointer are a few bytes each, and this
/// hashes them eight bytes per multiply.
///
/// The mixing is wyhash's (a 64 × 64 → 128-bit multiply folded to 64 bits), keyed with a seed
/// drawn once per process, so that keys chosen to collide (the tokens come from the documents a
/// client sends) cannot be chosen without knowing the seed.
enum TokenHash {
    static let processSeed = UInt64.random(in: .min ... .max)

    @inline(__always)
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of `token`'s UTF-8 bytes, keyed with `seed` (chain them to hash a sequence).
    @inline(__always)
    static func hash(_ token: String, seed: UInt64) -> UInt64 {
        if let hash = token.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), seed: seed) }) {
            return hash
        }
        var copy = token
        return copy.withUTF8 { hash(UnsafeRawBufferPointer($0), seed: seed) }
    }

    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var state = seed ^ mix(UInt64(bytes.count) ^ 0xA076_1D64_78BD_642F, 0xE703_7ED1_A0B4_28DB)
        var offset = 0
        while offset + 8 <= bytes.count {
            state = mix(state ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self), 0x8EBC_6AF0_9C88_C6E3)
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        return mix(state ^ tail ^ 0x5899_65CC_7537_4CC3, 0x1D8E_4E27_C47D_124F)
    }
}

/// An open-addressed table of node numbers, for a caller that keeps its keys elsewhere (by node)
/// and compares them itself. Each slot packs 32 bits of a key's hash (high half) with its node
/// plus one (low half; zero is an empty slot): a probe looks at a key only when those bits agree,
/// and the table grows without asking for the keys again. Linear probing, at most half full; no
/// storage until the first insertion (the writer's recorder makes two tables per commit, and its
/// path cache stays unused).
struct NodeTable: Sendable {
    private var slots: [UInt64] = []
    private(set) var count = 0

    init() {}

    /// A table with room for `capacity` nodes before it grows (none allocated for 0).
    init(capacity: Int) {
        guard capacity > 0 else { return }
        var size = 16
        while capacity * 2 > size { size *= 2 }
        slots = Array(repeating: 0, count: size)
    }

    /// The node whose key has `hash` and satisfies `matches`, or `nil`.
    @inline(__always)
    func find(hash: UInt64, matches: (Int32) -> Bool) -> Int32? {
        guard count > 0 else { return nil }
        let bits = UInt64(UInt32(truncatingIfNeeded: hash))
        let mask = slots.count - 1
        var index = Int(bits) & mask
        while true {
            let slot = slots[index]
            if slot == 0 { return nil }
            if slot >> 32 == bits {
                let node = Int32(truncatingIfNeeded: slot & 0xFFFF_FFFF) - 1
                if matches(node) { return node }
            }
            index = (index + 1) & mask
        }
    }

    /// Adds `node` under `hash` (the caller found none for its key).
    mutating func insert(_ node: Int32, hash: UInt64) {
        if (count + 1) * 2 > slots.count {
            let old = slots
            slots = Array(repeating: 0, count: max(16, old.count * 2))
            for slot in old where slot != 0 { place(slot) }
        }
        place(UInt64(UInt32(truncatingIfNeeded: hash)) << 32 | UInt64(UInt32(node + 1)))
        count += 1
    }

    private mutating func place(_ slot: UInt64) {
        let mask = slots.count - 1
        var index = Int(slot >> 32) & mask
        while slots[index] != 0 { index = (index + 1) & mask }
        slots[index] = slot
    }
}
