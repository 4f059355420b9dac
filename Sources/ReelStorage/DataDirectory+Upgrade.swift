import ReelLMDB

extension DataDirectory {
    /// How many records one upgrade transaction rewrites: bounded, so that a long log never needs
    /// one huge transaction (LMDB caps the pages one transaction may dirty).
    static let upgradeBatch = 10_000

    /// Rewrites every record of a format-1 directory with a checksum, then records format 2.
    ///
    /// Safe to interrupt: the format stays 1 until the last step, every record is re-encoded from
    /// what it decodes to (a record already rewritten decodes the same), so an upgrade cut short
    /// by a crash simply runs again at the next open. Records are checked as they are read: a
    /// damaged version-1 record that no longer decodes stops the upgrade with its seq.
    ///
    /// - Returns: the number of records rewritten.
    static func upgradeFromFormat1(
        env: LMDBEnvironment, databases: (log: LMDBDatabase, checkpoints: LMDBDatabase, dedup: LMDBDatabase, meta: LMDBDatabase),
        metadata: inout Metadata, path: String
    ) throws(StorageError) -> Int {
        var rewritten = 0
        rewritten += try rewrite(databases.log, in: env, path: path) { key, bytes throws(StorageError) in
            let seq = try decodeSeq(key, databases.log)
            return EnvelopeCodec.encode(try EnvelopeCodec.decode(seq: seq, from: bytes, acceptingLegacy: true))
        }
        rewritten += try rewrite(databases.checkpoints, in: env, path: path) { key, bytes throws(StorageError) in
            let seq = try decodeSeq(key, databases.checkpoints)
            return CheckpointCodec.encode(try CheckpointCodec.decode(seq: seq, from: bytes, acceptingLegacy: true))
        }
        rewritten += try rewrite(databases.dedup, in: env, path: path) { key, bytes throws(StorageError) in
            let name = String(decoding: key.withUnsafeBytes { Array($0) }, as: UTF8.self)
            return try DedupRecord(decoding: bytes, key: name, acceptingLegacy: true).encoded(forKey: name)
        }
        var upgraded = metadata
        upgraded.formatVersion = formatVersion
        do {
            try env.write { txn in try upgraded.write(txn, databases.meta) }
        } catch {
            throw wrap(error, "cannot record the upgrade of \(path) to storage format \(formatVersion)")
        }
        metadata = upgraded
        return rewritten
    }

    /// Replaces every value of `database` by `transform(key, value)`, in batches.
    private static func rewrite(
        _ database: LMDBDatabase, in env: LMDBEnvironment, path: String,
        _ transform: (RawSpan, UnsafeRawBufferPointer) throws(StorageError) -> [UInt8]
    ) throws(StorageError) -> Int {
        var after: [UInt8]? = nil
        var total = 0
        while true {
            var batch: [(key: [UInt8], value: [UInt8])] = []
            do {
                try env.read { txn in
                    let visit = { (key: RawSpan, value: RawSpan) throws -> Bool in
                        let keyBytes = key.withUnsafeBytes { Array($0) }
                        if keyBytes == after { return true }  // the last key of the previous batch
                        batch.append((keyBytes, try value.withUnsafeBytes { bytes throws(StorageError) in try transform(key, bytes) }))
                        return batch.count < upgradeBatch
                    }
                    if let after {
                        try txn.forEach(in: database, from: after, visit)
                    } else {
                        try txn.forEach(in: database, visit)
                    }
                }
                guard !batch.isEmpty else { return total }
                try env.write { txn in
                    for record in batch {
                        try txn.put(record.value, forKey: record.key, in: database)
                    }
                }
            } catch {
                throw wrap(error, "cannot upgrade \(path) to storage format \(formatVersion)")
            }
            total += batch.count
            after = batch.last?.key
        }
    }
}
