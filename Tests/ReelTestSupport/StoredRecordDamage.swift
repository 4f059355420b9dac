import ReelLMDB

/// Damages a record of a closed data directory on disk, as a flipped bit in the file would: the
/// value stored under `key` in the named database gets bit `bit` (counted from its first byte)
/// inverted, through LMDB, so the B-tree stays sound and only the record is wrong.
///
/// - Parameters:
///   - path: a data directory no one has open.
///   - database: `log`, `checkpoints`, `dedup` or `meta`.
///   - key: the record's key (a seq is 8 big-endian bytes, as ``seqKey(_:)`` gives).
///   - bit: which bit of the value; negative counts from the end.
public func damageStoredRecord(in path: String, database: String, key: [UInt8], bit: Int) throws {
    let env = try LMDBEnvironment(path: path)
    guard let db = try env.openDatabase(database, create: false) else {
        throw SpawnError("no database \(database) in \(path)")
    }
    try env.write { txn in
        guard var value = try txn.get(key, in: db) else { throw SpawnError("no record under that key in \(database)") }
        let index = bit >= 0 ? bit : value.count * 8 + bit
        value[index / 8] ^= UInt8(1 << (index % 8))
        try txn.put(value, forKey: key, in: db)
    }
}

/// Removes a record of a closed data directory, as a lost key would.
public func removeStoredRecord(in path: String, database: String, key: [UInt8]) throws {
    let env = try LMDBEnvironment(path: path)
    guard let db = try env.openDatabase(database, create: false) else {
        throw SpawnError("no database \(database) in \(path)")
    }
    try env.write { txn in _ = try txn.delete(key, in: db) }
}

/// A seq as the log and checkpoint databases key it: 8 big-endian bytes.
public func seqKey(_ seq: UInt64) -> [UInt8] {
    withUnsafeBytes(of: seq.bigEndian) { Array($0) }
}
