import ReelCore
import ReelLMDB

/// Works out the change index's entries for the actions a data directory is about to commit (the
/// store, which can fold them: this layer knows no reducers).
public protocol ChangeIndexFeed: AnyObject, Sendable {
    /// The postings of these actions, about to be committed right after the ones already indexed;
    /// `nil` when the feed cannot tell (it is not caught up with the index). Called on the
    /// committing thread, one commit at a time, outside any transaction.
    func postings(for actions: [ActionEnvelope]) -> ChangePostings?
    /// The postings last returned were not written (the commit failed, or the index had moved):
    /// the feed must find its place again before it answers more.
    func postingsNotWritten()
}

/// The change index lives in the data directory's LMDB environment, beside the log, and the
/// journal's applier writes it in the transaction that moves the actions it describes into the
/// log: a commit holds both or neither, so the index is never ahead of the log, and it is behind
/// only where a commit had no feed (the journal moved at open, `reel import`, a feed that lost its
/// place), which the store brings up to date when it opens (``appendToChangeIndex(_:)``).
extension DataDirectory {
    /// Lets `feed` work out the change index's entries of every commit of actions from now on.
    public func attachChangeIndexFeed(_ feed: (any ChangeIndexFeed)?) {
        changeFeed.withLock { $0 = feed }
    }

    /// How far the change index goes; `nil` when there is none (a directory no daemon has opened
    /// since the index was introduced, or opened read-only before).
    public func changeIndexStatus() throws(StorageError) -> ChangeIndexStatus? {
        guard let changes else { return nil }
        do {
            return try env.read { txn in try ChangeIndexWriter.status(txn, changes) }
        } catch {
            throw Self.wrap(error, "cannot read the change index")
        }
    }

    /// Empties the change index and starts it again for `reducer`, from the history's start (seq 0,
    /// or the origin of a directory made from a bundle).
    public func resetChangeIndex(reducer: ReducerIdentity) throws(StorageError) {
        guard let changes, !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        do {
            try env.write { txn in
                try txn.clear(changes)
                try txn.put(ChangeIndexKeys.encode(ChangeIndexStatus(indexedThrough: metadata.origin, reducer: reducer)), forKey: ChangeIndexKeys.statusKey, in: changes)
            }
        } catch {
            throw Self.wrap(error, "cannot reset the change index")
        }
    }

    /// Adds postings of actions already in the log, in a commit of their own (bringing the index
    /// up to date). Returns `false`, writing nothing, unless they continue the index.
    @discardableResult
    public func appendToChangeIndex(_ postings: ChangePostings) throws(StorageError) -> Bool {
        try appendToChangeIndex(ChangeLists(postings))
    }

    /// ``appendToChangeIndex(_:)-(ChangePostings)`` of lists already worked out.
    @discardableResult
    public func appendToChangeIndex(_ lists: ChangeLists) throws(StorageError) -> Bool {
        guard let changes, !isReadOnly else { throw StorageError(.invalidWrite, "\(path) is open read-only") }
        do {
            return try env.write { txn in try ChangeIndexWriter.append(lists, in: txn, db: changes) }
        } catch {
            throw Self.wrap(error, "cannot write the change index")
        }
    }

    /// Calls `body` with each seq of a list of the change index from `from` through `through`,
    /// oldest first or newest first, until it returns `false`; one read transaction.
    ///
    /// - Throws: ``StorageError`` `.corrupt` for a damaged chunk of the list.
    public func forEachIndexedChange(
        _ kind: ChangeIndexKind, pointer: String, from: UInt64, through: UInt64, newestFirst: Bool = false,
        _ body: (UInt64) throws -> Bool
    ) throws {
        guard let changes, from <= through else { return }
        let prefix = ChangeIndexKeys.prefix(kind, pointer)
        do {
            try env.read { txn in
                // Newest first: chunks from the one starting at or before `through`, backwards.
                // Oldest first: from the chunk that may hold `from` (the one starting at or
                // before it), forwards.
                var start = ChangeIndexKeys.key(prefix, newestFirst ? through : from)
                if !newestFirst {
                    let before = try txn.withCursor(in: changes) { cursor -> [UInt8]? in
                        try cursor.seek(atOrBefore: start) ? cursor.currentKey : nil
                    }
                    if let before, ChangeIndexKeys.chunkSeq(before, prefix: prefix) != nil { start = before }
                }
                try txn.forEach(in: changes, from: start, reverse: newestFirst) { key, value in
                    let keyBytes = key.withUnsafeBytes { Array($0) }
                    guard let first = ChangeIndexKeys.chunkSeq(keyBytes, prefix: prefix) else { return false }
                    if !newestFirst, first > through { return false }
                    let seqs = try value.withUnsafeBytes { bytes throws(StorageError) in
                        try ChangeIndexKeys.decode(bytes, key: keyBytes, first: first)
                    }
                    if newestFirst {
                        for seq in seqs.reversed() where seq <= through {
                            guard seq >= from else { return false }
                            guard try body(seq) else { return false }
                        }
                    } else {
                        for seq in seqs where seq >= from {
                            guard seq <= through else { return false }
                            guard try body(seq) else { return false }
                        }
                    }
                    return true
                }
            }
        } catch let error as LMDBError {
            throw Self.wrap(error, "cannot read the change index")
        }
    }
}

/// Writes postings into the `changes` database inside a write transaction.
enum ChangeIndexWriter {
    static func status(_ txn: borrowing some LMDBReadable & ~Copyable, _ db: LMDBDatabase) throws -> ChangeIndexStatus? {
        try txn.withValue(forKey: ChangeIndexKeys.statusKey, in: db) { value in
            try value.withUnsafeBytes { bytes throws(StorageError) in try ChangeIndexKeys.decodeStatus(bytes) }
        }
    }

    /// Appends every list of `postings` and moves the status past them; `false` (nothing written)
    /// when the index has no status or does not end right before them.
    static func append(_ postings: ChangePostings, in txn: borrowing LMDBWriteTransaction, db: LMDBDatabase) throws -> Bool {
        try append(ChangeLists(postings), in: txn, db: db)
    }

    /// ``append(_:in:db:)-(ChangePostings,_,_)`` of lists already worked out (in key order:
    /// neighbouring lists share pages).
    static func append(_ changeLists: ChangeLists, in txn: borrowing LMDBWriteTransaction, db: LMDBDatabase) throws -> Bool {
        guard let first = changeLists.first, let last = changeLists.last,
            var status = try? status(txn, db), status.indexedThrough == first - 1
        else { return false }
        // Into an index holding only its status (the first commit of a build), every chunk is
        // appended in key order, the status (key 0xFF, after every list) last: LMDB then fills
        // its pages, where inserts in order split them in halves.
        let fresh = try txn.count(in: db) == 1
        if fresh { try txn.delete(ChangeIndexKeys.statusKey, in: db) }
        // One buffer each for a chunk's key, seqs and value: a build writes about a hundred
        // thousand lists in one go, on one core, after its folds.
        var key: [UInt8] = []
        let chunk = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: ChangeIndexKeys.chunkCapacity)
        defer { chunk.deallocate() }
        let value = UnsafeMutableRawBufferPointer.allocate(byteCount: ChangeIndexKeys.maxChunkBytes, alignment: 8)
        defer { value.deallocate() }
        try changeLists.forEachList { (prefixBytes, seqs) throws in
            var seqs = seqs
            if !fresh { try fillNewestChunk(ofList: Array(prefixBytes), from: &seqs, in: txn, db: db) }
            key.removeAll(keepingCapacity: true)
            key.append(contentsOf: prefixBytes)
            while case let count = seqs.read(into: chunk), count > 0 {
                let chunkSeqs = UnsafeBufferPointer(rebasing: chunk[..<count])
                key.removeSubrange(prefixBytes.count...)
                withUnsafeBytes(of: chunkSeqs[0].bigEndian) { key.append(contentsOf: $0) }
                try key.withUnsafeBytes { (key) throws in
                    let count = ChangeIndexKeys.encodeChunk(chunkSeqs[...], key: key, into: value)
                    try txn.put(UnsafeRawBufferPointer(rebasing: value[..<count]), forKey: key, in: db, append: fresh)
                }
            }
        }
        status.indexedThrough = last
        try txn.put(ChangeIndexKeys.encode(status), forKey: ChangeIndexKeys.statusKey, in: db)
        return true
    }

    /// Fills the newest chunk of the list `prefix` (if it has one) with the next of `seqs`, up to
    /// ``ChangeIndexKeys/chunkCapacity``.
    private static func fillNewestChunk(
        ofList prefix: [UInt8], from seqs: inout ListSeqs, in txn: borrowing LMDBWriteTransaction, db: LMDBDatabase
    ) throws {
        let newest = try txn.withCursor(in: db) { cursor -> (key: [UInt8], value: [UInt8])? in
            guard try cursor.seek(atOrBefore: ChangeIndexKeys.key(prefix, .max)),
                let key = cursor.currentKey, let value = cursor.currentValue
            else { return nil }
            return (key, value)
        }
        guard let newest, let chunkFirst = ChangeIndexKeys.chunkSeq(newest.key, prefix: prefix) else { return }
        var chunk = try newest.value.withUnsafeBytes { bytes throws(StorageError) in
            ChangeIndexKeys.Chunk(first: chunkFirst, seqs: try ChangeIndexKeys.decode(bytes, key: newest.key, first: chunkFirst))
        }
        while chunk.seqs.count < ChangeIndexKeys.chunkCapacity, let seq = seqs.next() {
            if seq > chunk.seqs.last! { chunk.seqs.append(seq) }
        }
        try txn.put(ChangeIndexKeys.encode(chunk, key: newest.key), forKey: newest.key, in: db)
    }
}

extension DataDirectory {
    /// The bytes of pages the log and the change index take in the data file (their B-trees'
    /// branch, leaf and overflow pages), for the index's share of the log.
    public func logAndChangeIndexBytes() throws(StorageError) -> (log: Int, changeIndex: Int) {
        func bytes(_ stat: LMDBStat) -> Int { (stat.branchPages + stat.leafPages + stat.overflowPages) * stat.pageSize }
        do {
            return (bytes(try env.stat(log)), try changes.map { bytes(try env.stat($0)) } ?? 0)
        } catch {
            throw Self.wrap(error, "cannot read the sizes of the databases")
        }
    }
}
