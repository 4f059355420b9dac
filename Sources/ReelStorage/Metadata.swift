#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ReelCore
import ReelLMDB

/// What a data directory records about itself when it is created.
///
/// Stored in the `meta` database as three strings (`format`, `reducer`, `created`), a fourth
/// (`origin`) in a directory whose history starts after seq 0, and, from storage format 2 on, a
/// `checksum` over them, so that damage to them is an error rather than, say, a directory that
/// seems to belong to another reducer.
public struct Metadata: Sendable, Equatable {
    /// The storage format (``DataDirectory/formatVersion``).
    public var formatVersion: String
    /// The reducer the directory was created for (its name only: versions may change over time).
    public var reducerName: String
    public var created: Timestamp
    /// The seq this directory's history starts after: 0 for a history from its first action; for
    /// a directory made from a bundle (`reel import --bundle`), the seq of the state the bundle
    /// starts from, kept as the checkpoint at that seq (``DataDirectory/Options/origin``). Its log
    /// holds seqs `origin+1…`; nothing before `origin` can be read.
    public var origin: UInt64 = 0

    /// Reads the metadata, creating it in a new directory. An existing directory of an older
    /// format is returned as it is: the caller upgrades it.
    ///
    /// - Parameter origin: for a new directory, the seq its history starts after and what else to
    ///   write with the metadata (the state at that seq), in the same transaction.
    static func load(
        env: LMDBEnvironment, db: LMDBDatabase, path: String, reducerName: String?, readOnly: Bool,
        origin: (seq: UInt64, write: (borrowing LMDBWriteTransaction) throws -> Void)? = nil
    ) throws(StorageError) -> Metadata {
        let stored: Metadata?
        do {
            stored = try env.read { txn in try read(txn, db, path: path) }
        } catch {
            throw DataDirectory.wrap(error, "cannot read the metadata of \(path)")
        }
        guard let stored else {
            guard !readOnly else {
                throw StorageError(.notFound, "\(path) is not a Reel data directory (no metadata)")
            }
            let fresh = Metadata(
                formatVersion: DataDirectory.formatVersion, reducerName: reducerName ?? "", created: .now(), origin: origin?.seq ?? 0
            )
            do {
                try env.write { txn in
                    try fresh.write(txn, db)
                    try origin?.write(txn)
                }
            } catch {
                throw DataDirectory.wrap(error, "cannot initialize \(path)")
            }
            return fresh
        }
        guard DataDirectory.readableFormats.contains(stored.formatVersion) else {
            throw StorageError(
                .incompatible,
                "\(path) has storage format \(stored.formatVersion); this build reads formats "
                    + DataDirectory.readableFormats.joined(separator: " and ")
            )
        }
        if let reducerName, !stored.reducerName.isEmpty, stored.reducerName != reducerName {
            throw StorageError(
                .incompatible,
                "\(path) holds the log of reducer '\(stored.reducerName)', not '\(reducerName)'; use another data directory"
            )
        }
        return stored
    }

    /// Writes every field and the checksum (in the caller's transaction).
    func write(_ txn: borrowing LMDBWriteTransaction, _ db: LMDBDatabase) throws {
        for (key, value) in fields {
            try txn.put(Array(value.utf8), forKey: Array(key.utf8), in: db)
        }
        try txn.put(checksum, forKey: Array("checksum".utf8), in: db)
    }

    private var fields: [(String, String)] {
        let fields = [("format", formatVersion), ("reducer", reducerName), ("created", String(created.nanosecondsSince1970))]
        // Only where there is one: the checksums of directories from the first action are as before.
        return origin == 0 ? fields : fields + [("origin", String(origin))]
    }

    /// Checksum of the fields, each as name, NUL, value, NUL.
    private var checksum: [UInt8] {
        var bytes: [UInt8] = []
        for (key, value) in fields {
            bytes += Array(key.utf8) + [0] + Array(value.utf8) + [0]
        }
        let sum = bytes.withUnsafeBytes { RecordChecksum.of($0, seed: 0) }
        return withUnsafeBytes(of: sum.littleEndian) { Array($0) }
    }

    private static func read(_ txn: borrowing LMDBReadTransaction, _ db: LMDBDatabase, path: String) throws -> Metadata? {
        func string(_ key: String) throws -> String? {
            try txn.get(Array(key.utf8), in: db).map { String(decoding: $0, as: UTF8.self) }
        }
        guard let format = try string("format") else { return nil }
        var metadata = Metadata(
            formatVersion: format,
            reducerName: try string("reducer") ?? "",
            created: Timestamp(nanosecondsSince1970: Int64(try string("created") ?? "") ?? 0)
        )
        if let origin = try string("origin") {
            guard let seq = UInt64(origin), seq > 0 else {
                throw StorageError(.corrupt, "the metadata of \(path) is damaged: its origin '\(origin)' is not a seq")
            }
            metadata.origin = seq
        }
        // Format 1 had no checksum; from format 2 on, a missing or wrong one is damage.
        if format != "1", try txn.get(Array("checksum".utf8), in: db) != metadata.checksum {
            throw StorageError(.corrupt, "the metadata of \(path) is damaged: its checksum does not match")
        }
        return metadata
    }
}

extension Timestamp {
    /// The wall-clock time now. Only the store's dispatch path calls this (to stamp envelopes);
    /// reducers read time from the envelope.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(nanosecondsSince1970: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}
