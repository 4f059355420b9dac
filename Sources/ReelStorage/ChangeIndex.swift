import ReelCore
import ReelJSON
import ReelLMDB

/// The change index's two lists per JSON Pointer.
public enum ChangeIndexKind: UInt8, Sendable, CaseIterable {
    /// Seqs whose action changed the value at the pointer (see ``JSONChanges/changed``).
    case changed = 0
    /// Seqs whose action changed something under the pointer that the index did not follow:
    /// any pointer below may have changed (see ``JSONChanges/unfollowed``).
    case unfollowed = 1
}

/// How far the change index goes, and under which reducer it was built.
public struct ChangeIndexStatus: Sendable, Equatable {
    /// Every action through this seq is in the index; none after it.
    public var indexedThrough: UInt64
    /// The reducer whose actions were indexed: another version may change differently.
    public var reducer: ReducerIdentity

    public init(indexedThrough: UInt64, reducer: ReducerIdentity) {
        self.indexedThrough = indexedThrough
        self.reducer = reducer
    }
}

/// What a run of consecutive actions changed, gathered into the index's lists before they are
/// written: one list of seqs per (kind, pointer).
///
/// Each action is recorded into ``recorder`` between ``startAction()`` and
/// ``endAction(seq:)``; its pointers are interned for the whole run, so a list is found by the
/// pointer's number (an array index), and its string is built once, when the lists are written.
public struct ChangePostings: Sendable {
    /// Records the current action's changes; interns the run's pointers.
    public var recorder = JSONChangeRecorder()
    /// The `changed` list of each pointer of ``recorder``'s tree, by node (empty for most).
    private var changedLists: [[UInt64]] = []
    /// The `unfollowed` lists, by node: far fewer.
    private var unfollowedLists: [PointerTree.Node: [UInt64]] = [:]
    /// The seqs covered: every action of this run, whether it changed anything or not.
    public private(set) var first: UInt64?
    public private(set) var last: UInt64?

    public init() {}

    /// Starts recording the next action of the run.
    public mutating func startAction() {
        recorder.startEdit()
    }

    /// Adds what ``recorder`` recorded since ``startAction()`` as the changes of `seq`.
    public mutating func endAction(seq: UInt64) {
        if first == nil { first = seq }
        last = seq
        let tree = recorder.tree
        if changedLists.count < tree.count { changedLists.append(contentsOf: repeatElement([], count: tree.count - changedLists.count)) }
        for node in recorder.changedNodes {
            if tree.byteCount(of: node) <= ChangeIndexKeys.maxPointerBytes {
                changedLists[Int(node)].appendUnlessLast(seq)
            } else {
                unfollowedLists[Self.fitting(node, in: tree), default: []].appendUnlessLast(seq)
            }
        }
        for node in recorder.unfollowedNodes {
            unfollowedLists[Self.fitting(node, in: tree), default: []].appendUnlessLast(seq)
        }
    }

    /// `node`, or its nearest ancestor short enough to be a key (LMDB's keys are at most 511
    /// bytes): a longer pointer's changes are listed as unfollowed changes of that ancestor.
    private static func fitting(_ node: PointerTree.Node, in tree: PointerTree) -> PointerTree.Node {
        var node = node
        while tree.byteCount(of: node) > ChangeIndexKeys.maxPointerBytes, let parent = tree.parent(of: node) { node = parent }
        return node
    }

    /// Every non-empty list, with its pointer's string.
    var lists: [(kind: ChangeIndexKind, pointer: String, seqs: [UInt64])] {
        let tree = recorder.tree
        var lists: [(kind: ChangeIndexKind, pointer: String, seqs: [UInt64])] = []
        for (node, seqs) in changedLists.enumerated() where !seqs.isEmpty {
            lists.append((.changed, tree.pointer(of: PointerTree.Node(node)), seqs))
        }
        for (node, seqs) in unfollowedLists { lists.append((.unfollowed, tree.pointer(of: node), seqs)) }
        return lists
    }

    public var postingCount: Int { changedLists.reduce(0) { $0 + $1.count } + unfollowedLists.values.reduce(0) { $0 + $1.count } }
}

extension Array where Element == UInt64 {
    /// Appends `seq` unless it is already the last element (two pointers of one action that fall
    /// into one list).
    fileprivate mutating func appendUnlessLast(_ seq: UInt64) {
        if last != seq { append(seq) }
    }
}

/// Keys and values of the `changes` database.
///
/// - A list's entries are chunks: key `kind (1 byte) · pointer length (2, big-endian) · pointer
///   (UTF-8) · first seq (8, big-endian)`, value `version (1) · count · last seq · count − 1
///   deltas (varints) · checksum (seeded with the key)`. A pointer's chunks are adjacent and in
///   seq order; each holds at most ``chunkCapacity`` seqs, the newest is filled before another
///   is started.
/// - The status: key `0xFF`, value `version (1) · indexed-through seq · reducer name · reducer
///   version · checksum`.
enum ChangeIndexKeys {
    static let chunkCapacity = 128
    static let chunkVersion: UInt8 = 1
    static let statusKey: [UInt8] = [0xFF]
    /// LMDB's keys are at most 511 bytes: a longer pointer's changes are listed as unfollowed
    /// changes of its longest ancestor that fits (``ChangePostings``).
    static let maxPointerBytes = 400

    static func prefix(_ kind: ChangeIndexKind, _ pointer: String) -> [UInt8] {
        let bytes = Array(pointer.utf8)
        var key: [UInt8] = [kind.rawValue, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)]
        key.reserveCapacity(3 + bytes.count + 8)
        key += bytes
        return key
    }

    static func key(_ prefix: [UInt8], _ seq: UInt64) -> [UInt8] {
        var key = prefix
        withUnsafeBytes(of: seq.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// The first seq of a chunk whose key starts with `prefix`, or `nil` for another list's key.
    static func chunkSeq(_ key: [UInt8], prefix: [UInt8]) -> UInt64? {
        guard key.count == prefix.count + 8, key.starts(with: prefix) else { return nil }
        return key[prefix.count...].reduce(0) { $0 << 8 | UInt64($1) }
    }

    struct Chunk {
        var first: UInt64
        var seqs: [UInt64]
    }

    static func encode(_ chunk: Chunk, key: [UInt8]) -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 16 + chunk.seqs.count * 2)
        writer.writeUInt8(chunkVersion)
        writer.writeVarint(UInt64(chunk.seqs.count))
        writer.writeVarint(chunk.seqs.last!)
        var previous = chunk.seqs[0]
        for seq in chunk.seqs.dropFirst() {
            writer.writeVarint(seq - previous)
            previous = seq
        }
        RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: key))
        return writer.bytes
    }

    static func decode(_ value: UnsafeRawBufferPointer, key: [UInt8], first: UInt64) throws(StorageError) -> [UInt64] {
        let damaged = { (reason: String) in
            StorageError(.corrupt, "the change index is damaged (a list of \(describe(key))): \(reason); the daemon rebuilds it when it next opens the store")
        }
        guard let body = RecordChecksum.open(value, seed: RecordChecksum.seed(ofKey: key)) else { throw damaged("checksum mismatch") }
        do {
            var reader = BinaryReader(body)
            guard try reader.readUInt8() == chunkVersion else { throw damaged("unknown version") }
            let count = try reader.readVarint()
            let last = try reader.readVarint()
            guard count >= 1, count <= UInt64(chunkCapacity) else { throw damaged("\(count) entries") }
            var seqs = [first]
            seqs.reserveCapacity(Int(count))
            for _ in 1..<count {
                let (next, overflow) = seqs.last!.addingReportingOverflow(try reader.readVarint())
                guard !overflow, next > seqs.last! else { throw damaged("seqs out of order") }
                seqs.append(next)
            }
            guard reader.isAtEnd, seqs.last == last else { throw damaged("unexpected bytes") }
            return seqs
        } catch let error as StorageError {
            throw error
        } catch {
            throw damaged("\(error)")
        }
    }

    static func describe(_ key: [UInt8]) -> String {
        guard key.count >= 3 else { return "a short key" }
        let length = Int(key[1]) << 8 | Int(key[2])
        let pointer = String(decoding: key.dropFirst(3).prefix(length), as: UTF8.self)
        return "\"\(pointer)\""
    }

    static func encode(_ status: ChangeIndexStatus) -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: 32)
        writer.writeUInt8(1)
        writer.writeVarint(status.indexedThrough)
        writer.writeString(status.reducer.name)
        writer.writeString(status.reducer.version)
        RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: statusKey))
        return writer.bytes
    }

    static func decodeStatus(_ value: UnsafeRawBufferPointer) throws(StorageError) -> ChangeIndexStatus {
        let damaged = StorageError(.corrupt, "the change index's status record is damaged; the daemon rebuilds the index when it next opens the store")
        guard let body = RecordChecksum.open(value, seed: RecordChecksum.seed(ofKey: statusKey)) else { throw damaged }
        do {
            var reader = BinaryReader(body)
            guard try reader.readUInt8() == 1 else { throw damaged }
            let through = try reader.readVarint()
            let name = try reader.readString()
            let version = try reader.readString()
            guard reader.isAtEnd else { throw damaged }
            return ChangeIndexStatus(indexedThrough: through, reducer: ReducerIdentity(name: name, version: version))
        } catch {
            throw damaged
        }
    }
}
