import CReelXXHash

/// The checksum every stored record carries: XXH3-64 (Debian's libxxhash) of the record's bytes,
/// seeded with the record's key, stored as 8 little-endian bytes at the end of the record.
///
/// Why XXH3 and not CRC32C or SHA-256: it runs at memory speed (tens of GB/s, a few nanoseconds
/// for a 100-byte action), so checking every record on every read costs the replay path almost
/// nothing; a well-kept C library ships it on Debian, where no CRC32C library is packaged; and 64
/// bits make an undetected random corruption a 2⁻⁶⁴ event. It guards against damage, not against
/// an attacker who can write the file (who could as well rewrite the log). SHA-256 stays as the
/// checkpoint's *state* hash, which `reel verify` compares with the replay.
///
/// Seeding with the key binds a record to its place: a record whose key was damaged, or that
/// LMDB returns under another key, fails its check like one whose bytes were damaged.
package enum RecordChecksum {
    static let byteCount = 8

    /// The checksum of `bytes` stored under a key whose seed is `seed` (a seq, or ``seed(ofKey:)``).
    package static func of(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        XXH3_64bits_withSeed(bytes.baseAddress, bytes.count, seed)
    }

    /// The seed for records whose key is not a seq (idempotency keys, metadata names).
    static func seed(ofKey key: some Sequence<UInt8>) -> UInt64 {
        let bytes = Array(key)
        return bytes.withUnsafeBytes { seed(ofKey: $0) }
    }

    /// ``seed(ofKey:)-(Sequence<UInt8>)`` of a key in place.
    static func seed(ofKey key: UnsafeRawBufferPointer) -> UInt64 {
        XXH3_64bits(key.baseAddress, key.count)
    }

    /// Appends the checksum of everything in `record` so far.
    package static func seal(_ record: inout [UInt8], seed: UInt64) {
        let sum = record.withUnsafeBytes { of($0, seed: seed) }
        withUnsafeBytes(of: sum.littleEndian) { record.append(contentsOf: $0) }
    }

    /// The record without its checksum, when the checksum matches; `nil` when it does not (or the
    /// record is too short to carry one).
    static func open(_ record: UnsafeRawBufferPointer, seed: UInt64) -> UnsafeRawBufferPointer? {
        guard record.count >= byteCount else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: record[..<(record.count - byteCount)])
        var stored: UInt64 = 0
        withUnsafeMutableBytes(of: &stored) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[body.count...])) }
        return UInt64(littleEndian: stored) == of(body, seed: seed) ? body : nil
    }
}
