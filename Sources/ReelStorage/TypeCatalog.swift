import ReelCore
import ReelJSON
import ReelLMDB
import Synchronization

/// An action type at one version, as the log holds it: what a daemon checks against its
/// reducers before it starts, and `check-history` lists.
public struct StoredActionType: Sendable, Hashable, Comparable {
    public var type: String
    public var version: Int
    /// The first seq that holds an action of this type and version.
    public var firstSeq: UInt64

    public init(type: String, version: Int, firstSeq: UInt64) {
        self.type = type
        self.version = version
        self.firstSeq = firstSeq
    }

    public static func < (lhs: StoredActionType, rhs: StoredActionType) -> Bool {
        (lhs.type, lhs.version) < (rhs.type, rhs.version)
    }
}

/// The `types` database: every (type, version) the log holds, with the first seq of each, kept
/// in the transaction that appends the actions. A new pair is a rare write (a type dispatched for
/// the first time, or at a new version); the rest of the time a commit only looks the pairs of its
/// records up in memory.
///
/// Key: the type's UTF-8 bytes · 0 · the version (8 bytes, big-endian). Value: the first seq
/// (varint) · checksum (``RecordChecksum``, seeded with the key). The `meta` key `types` says the
/// catalog covers the whole log: a directory made before it has its log read once, at its first
/// open for writing, to fill it.
final class TypeCatalog: Sendable {
    struct Pair: Hashable {
        var type: String
        var version: Int
    }

    static let completeKey = Array("types".utf8)
    let db: LMDBDatabase
    private let known: Mutex<[Pair: UInt64]>

    private init(db: LMDBDatabase, known: [Pair: UInt64]) {
        self.db = db
        self.known = Mutex(known)
    }

    /// The catalog as stored, or `nil` when it does not cover the log yet.
    /// - Throws: ``StorageError`` `.corrupt` for a damaged entry.
    static func load(
        db: LMDBDatabase?, meta: LMDBDatabase, in txn: borrowing some LMDBReadable & ~Copyable
    ) throws -> TypeCatalog? {
        guard let db, try txn.get(completeKey, in: meta) != nil else { return nil }
        var known: [Pair: UInt64] = [:]
        try txn.forEach(in: db) { key, value in
            let keyBytes = key.withUnsafeBytes { Array($0) }
            guard let pair = Self.pair(fromKey: keyBytes) else {
                throw StorageError(.corrupt, "the catalog of action types is damaged: a key of \(keyBytes.count) bytes")
            }
            known[pair] = try value.withUnsafeBytes { bytes throws(StorageError) in try Self.firstSeq(bytes, key: keyBytes) }
            return true
        }
        return TypeCatalog(db: db, known: known)
    }

    /// Fills a catalog from the log (a directory made before catalogs) and marks it complete,
    /// in one transaction.
    static func build(
        db: LMDBDatabase, meta: LMDBDatabase, log: LMDBDatabase, env: LMDBEnvironment
    ) throws -> TypeCatalog {
        let known = try env.read { txn in try scan(log, in: txn) }
        let catalog = TypeCatalog(db: db, known: [:])
        try env.write { txn in
            try catalog.write(known, in: txn)
            try txn.put([1], forKey: completeKey, in: meta)
        }
        catalog.remember(known)
        return catalog
    }

    /// The pairs of the whole log, each with its first seq, read from the records' headers.
    static func scan(_ log: LMDBDatabase, in txn: borrowing some LMDBReadable & ~Copyable) throws -> [Pair: UInt64] {
        var known: [Pair: UInt64] = [:]
        try txn.forEach(in: log) { key, value in
            let seq = try DataDirectory.decodeSeq(key, log)
            guard let read = value.withUnsafeBytes({ EnvelopeCodec.typeAndVersion(of: $0) }) else {
                throw StorageError(.corrupt, "action \(seq) is damaged: its header does not read")
            }
            let pair = Pair(type: read.type, version: read.version)
            if known[pair] == nil { known[pair] = seq }
            return true
        }
        return known
    }

    /// `known` as the catalog lists it, sorted by type and version.
    static func listed(_ known: [Pair: UInt64]) -> [StoredActionType] {
        known.map { StoredActionType(type: $0.key.type, version: $0.key.version, firstSeq: $0.value) }.sorted()
    }

    /// Every pair the log holds, sorted by type and version.
    var stored: [StoredActionType] {
        known.withLock { Self.listed($0) }
    }

    /// The pairs of `batch`'s records the catalog lacks, each with its first seq among them: worked
    /// out before the transaction that appends them, written in it, remembered after it. The
    /// actions the writer still had decoded are read as they are; the others' headers are read.
    func additions(in batch: EncodedBatch) -> [Pair: UInt64] {
        let decoded = batch.envelopes.count == batch.records.count
        var additions: [Pair: UInt64] = [:]
        known.withLock { known in
            var last: Pair?
            for index in 0..<batch.records.count {
                let read: (type: String, version: Int)? = decoded
                    ? (batch.envelopes[index].type, batch.envelopes[index].version)
                    : batch.records.withRecord(at: index) { EnvelopeCodec.typeAndVersion(of: $0) }
                guard let read else { continue }
                // Consecutive actions of one type are the common case: one comparison each.
                if let last, last.type == read.type, last.version == read.version { continue }
                let pair = Pair(type: read.type, version: read.version)
                last = pair
                if known[pair] == nil, additions[pair] == nil { additions[pair] = batch.records.seq(at: index) }
            }
        }
        return additions
    }

    func write(_ additions: [Pair: UInt64], in txn: borrowing LMDBWriteTransaction) throws {
        for (pair, seq) in additions {
            let key = Self.key(pair)
            var writer = BinaryWriter(reservingCapacity: 24)
            writer.writeVarint(seq)
            RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: key))
            try txn.put(writer.bytes, forKey: key, in: db)
        }
    }

    func remember(_ additions: [Pair: UInt64]) {
        guard !additions.isEmpty else { return }
        known.withLock { known in known.merge(additions) { first, _ in first } }
    }

    private static func key(_ pair: Pair) -> [UInt8] {
        var key = Array(pair.type.utf8)
        key.append(0)
        withUnsafeBytes(of: UInt64(clamping: pair.version).bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    private static func pair(fromKey key: [UInt8]) -> Pair? {
        guard key.count >= 9, key[key.count - 9] == 0 else { return nil }
        let version = key[(key.count - 8)...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard let version = Int(exactly: version) else { return nil }
        return Pair(type: String(decoding: key[..<(key.count - 9)], as: UTF8.self), version: version)
    }

    private static func firstSeq(_ bytes: UnsafeRawBufferPointer, key: [UInt8]) throws(StorageError) -> UInt64 {
        guard let body = RecordChecksum.open(bytes, seed: RecordChecksum.seed(ofKey: key)) else {
            throw StorageError(.corrupt, "the catalog of action types is damaged: an entry's checksum does not match")
        }
        var reader = BinaryReader(body)
        guard let seq = try? reader.readVarint(), reader.isAtEnd, seq >= 1 else {
            throw StorageError(.corrupt, "the catalog of action types is damaged: an entry names no seq")
        }
        return seq
    }
}
