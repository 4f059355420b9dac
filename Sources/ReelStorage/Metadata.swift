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
public struct Metadata: Sendable, Equatable {
    /// The storage format (``DataDirectory/formatVersion``).
    public var formatVersion: String
    /// The reducer the directory was created for (its name only: versions may change over time).
    public var reducerName: String
    public var created: Timestamp

    static func load(
        env: LMDBEnvironment, db: LMDBDatabase, path: String, reducerName: String?, readOnly: Bool
    ) throws(StorageError) -> Metadata {
        let stored: Metadata?
        do {
            stored = try env.read { txn in try read(txn, db) }
        } catch {
            throw DataDirectory.wrap(error, "cannot read the metadata of \(path)")
        }
        guard let stored else {
            guard !readOnly else {
                throw StorageError(.notFound, "\(path) is not a Reel data directory (no metadata)")
            }
            let fresh = Metadata(
                formatVersion: DataDirectory.formatVersion, reducerName: reducerName ?? "", created: .now()
            )
            do {
                try env.write { txn in
                    try txn.put(Array(fresh.formatVersion.utf8), forKey: Array("format".utf8), in: db)
                    try txn.put(Array(fresh.reducerName.utf8), forKey: Array("reducer".utf8), in: db)
                    try txn.put(Array(String(fresh.created.nanosecondsSince1970).utf8), forKey: Array("created".utf8), in: db)
                }
            } catch {
                throw DataDirectory.wrap(error, "cannot initialize \(path)")
            }
            return fresh
        }
        guard stored.formatVersion == DataDirectory.formatVersion else {
            throw StorageError(
                .incompatible,
                "\(path) has storage format \(stored.formatVersion); this build reads format \(DataDirectory.formatVersion)"
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

    private static func read(_ txn: borrowing LMDBReadTransaction, _ db: LMDBDatabase) throws -> Metadata? {
        func string(_ key: String) throws -> String? {
            try txn.get(Array(key.utf8), in: db).map { String(decoding: $0, as: UTF8.self) }
        }
        guard let format = try string("format") else { return nil }
        return Metadata(
            formatVersion: format,
            reducerName: try string("reducer") ?? "",
            created: Timestamp(nanosecondsSince1970: Int64(try string("created") ?? "") ?? 0)
        )
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
