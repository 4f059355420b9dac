#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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

/// What a run of consecutive actions changed, gathered before it is written into the index's
/// lists (one list of seqs per kind and pointer).
///
/// Each action is recorded into ``recorder`` between ``startAction()`` and
/// ``endAction(seq:)``. Its pointers are interned for the whole run: an action's changes are kept
/// as node numbers, in order, so that the actions of a batch the writer undoes can be taken off
/// the end (``removeActions(after:)``), two runs can be joined (``append(_:)``), and a pointer's
/// string is built once, when the lists are written.
public struct ChangePostings: Sendable {
    /// Records the current action's changes; interns the run's pointers. (Made by the
    /// initializers only: a default value would be made, then replaced.)
    public var recorder: JSONChangeRecorder
    /// Each action's seq and where its entries end in ``entries``.
    private var actions: [(seq: UInt64, end: Int)] = []
    /// The actions' entries: `n` for a change of node `n`, `~n` for one left unfollowed below it.
    private var entries: [PointerTree.Node] = []
    /// Whether an action may list a changed node twice: never as recorded (the recorder lists
    /// each changed node once per action), possibly once runs are appended (``append(_:)``
    /// interns one run's pointers anew in the other's tree).
    private var changesMayRepeat = false

    public init() {
        recorder = JSONChangeRecorder()
    }

    /// Postings with room for `actions` actions that change about one pointer each, allocated at
    /// once (a group's: the writer knows how many requests it evaluates).
    public init(capacity actions: Int) {
        recorder = JSONChangeRecorder(capacity: actions)
        self.actions.reserveCapacity(actions)
        entries.reserveCapacity(actions)
    }

    /// The seqs covered: every action of this run, whether it changed anything or not.
    public var first: UInt64? { actions.first?.seq }
    public var last: UInt64? { actions.last?.seq }
    /// How many actions are recorded.
    public var actionCount: Int { actions.count }

    /// Whether these are the changes of exactly `records`' actions, one each, in order.
    func covers(_ records: LogRecords) -> Bool {
        actions.count == records.count && actions.indices.allSatisfy { actions[$0].seq == records.seq(at: $0) }
    }

    /// Starts recording the next action of the run.
    public mutating func startAction() {
        recorder.startEdit()
    }

    /// Adds what ``recorder`` recorded since ``startAction()`` as the changes of `seq`.
    public mutating func endAction(seq: UInt64) {
        let tree = recorder.tree
        if tree.longestByteCount <= ChangeIndexKeys.maxPointerBytes {
            // Every pointer fits a key (nearly always): no node's length is looked up.
            entries.append(contentsOf: recorder.changedNodes)
            for node in recorder.unfollowedNodes { entries.append(~node) }
        } else {
            for node in recorder.changedNodes {
                entries.append(tree.byteCount(of: node) <= ChangeIndexKeys.maxPointerBytes ? node : ~Self.fitting(node, in: tree))
            }
            for node in recorder.unfollowedNodes { entries.append(~Self.fitting(node, in: tree)) }
        }
        actions.append((seq, entries.count))
        recorder.startEdit()
    }

    /// Forgets the actions after `seq` (a batch the writer undid).
    public mutating func removeActions(after seq: UInt64) {
        guard let kept = actions.lastIndex(where: { $0.seq <= seq }) else {
            actions.removeAll()
            entries.removeAll()
            return
        }
        entries.removeSubrange(actions[kept].end...)
        actions.removeSubrange((kept + 1)...)
    }

    /// Appends the actions of `other`, which follow this run's (their pointers interned anew).
    public mutating func append(_ other: ChangePostings) {
        let tree = other.recorder.tree
        let offset = entries.count
        changesMayRepeat = true
        // The journal joins every group's postings this way, a group of one action as often as
        // not: the mapping lives on the stack (an array of it looked its type's metadata up at
        // every join, most of a small group's join), and the entries are appended one by one.
        withUnsafeTemporaryAllocation(of: PointerTree.Node.self, capacity: max(tree.count, 1)) { mapping in
            // Parents are numbered before their children: one pass maps every node.
            mapping[0] = PointerTree.root
            for node in 1..<max(tree.count, 1) {
                let parent = mapping[Int(tree.parent(of: PointerTree.Node(node))!)]
                mapping[node] = recorder.intern(tree.token(of: PointerTree.Node(node)), below: parent)
            }
            for entry in other.entries { entries.append(entry >= 0 ? mapping[Int(entry)] : ~mapping[Int(~entry)]) }
        }
        for action in other.actions { actions.append((action.seq, action.end + offset)) }
    }

    /// `node`, or its nearest ancestor short enough to be a key (LMDB's keys are at most 511
    /// bytes): a longer pointer's changes are listed as unfollowed changes of that ancestor.
    private static func fitting(_ node: PointerTree.Node, in tree: PointerTree) -> PointerTree.Node {
        var node = node
        while tree.byteCount(of: node) > ChangeIndexKeys.maxPointerBytes, let parent = tree.parent(of: node) { node = parent }
        return node
    }

    /// Every non-empty list, by its node (`~node` for an unfollowed list): its seqs are
    /// `seqs[starts[i]..<starts[i + 1]]` for the `i`-th, in no particular order of lists.
    ///
    /// Two passes over the entries: the first counts each pointer's seqs, the second fills them
    /// into one array at each pointer's offset.
    func flatLists() -> (nodes: [PointerTree.Node], starts: [Int], seqs: [UInt64]) {
        let tree = recorder.tree
        // Each node's count of seqs, then where its next seq goes. Zeroing arrays of a tree's
        // size (a hundred thousand nodes in a build's part) was a quarter of this: one is kept.
        var next = [Int](repeating: 0, count: tree.count)
        // The seq last listed per node, where two changes of one action may fall into one list.
        var lastListed = changesMayRepeat ? [UInt64](repeating: 0, count: tree.count) : []
        var unfollowed: [PointerTree.Node: [UInt64]] = [:]
        forEachEntry { seq, entry in
            guard entry >= 0 else { return unfollowed[~entry, default: []].appendUnlessLast(seq) }
            if changesMayRepeat {
                guard lastListed[Int(entry)] != seq else { return }
                lastListed[Int(entry)] = seq
            }
            next[Int(entry)] += 1
        }
        var nodes: [PointerTree.Node] = []
        var starts = [0]
        var total = 0
        for node in next.indices where next[node] > 0 {
            let count = next[node]
            next[node] = total
            total += count
            nodes.append(PointerTree.Node(node))
            starts.append(total)
        }
        if changesMayRepeat {
            for index in lastListed.indices { lastListed[index] = 0 }
        }
        // Every place is written once: each node's count is the number of its seqs written.
        var seqs = [UInt64](unsafeUninitializedCapacity: total) { buffer, initialized in
            forEachEntry { seq, entry in
                guard entry >= 0 else { return }
                if changesMayRepeat {
                    guard lastListed[Int(entry)] != seq else { return }
                    lastListed[Int(entry)] = seq
                }
                buffer[next[Int(entry)]] = seq
                next[Int(entry)] += 1
            }
            initialized = total
        }
        for (node, listed) in unfollowed {
            nodes.append(~node)
            seqs.append(contentsOf: listed)
            starts.append(seqs.count)
        }
        return (nodes, starts, seqs)
    }

    /// The pointers the run's actions changed, each once, every ancestor included (as
    /// ``JSONChanges/changed`` lists them), or `nil` when an action left a change unfollowed below
    /// some pointer (any pointer there may have changed, or not: only the documents tell).
    ///
    /// For whoever keeps the values at some pointers up to date (the server's subscriptions): a
    /// pointer not listed kept its value, so only the listed ones need reading again.
    public func changedPointers() -> [JSONPointer]? {
        let tree = recorder.tree
        var seen = [Bool](repeating: false, count: tree.count)
        var nodes: [PointerTree.Node] = []
        var unfollowed = false
        forEachEntry { _, entry in
            guard entry >= 0 else {
                unfollowed = true
                return
            }
            guard !seen[Int(entry)] else { return }
            seen[Int(entry)] = true
            nodes.append(entry)
        }
        guard !unfollowed else { return nil }
        return nodes.map { JSONPointer(tokens: tree.tokens(of: $0)) }
    }

    /// Every entry with its action's seq, in order; read through unsafe buffers (a slice of the
    /// entries per action retained and released the array: two fifths of listing a million
    /// actions).
    private func forEachEntry(_ body: (UInt64, PointerTree.Node) -> Void) {
        actions.withUnsafeBufferPointer { actions in
            entries.withUnsafeBufferPointer { entries in
                var start = 0
                for (seq, end) in actions {
                    for entry in entries[start..<end] { body(seq, entry) }
                    start = end
                }
            }
        }
    }

    public var postingCount: Int { entries.count }
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

    /// ``prefix(_:_:)`` of `node`'s pointer in `tree`, appended to `bytes` (no string built).
    static func appendPrefix(_ kind: ChangeIndexKind, of node: PointerTree.Node, in tree: PointerTree, to bytes: inout [UInt8]) {
        let length = tree.byteCount(of: node)
        bytes.append(kind.rawValue)
        bytes.append(UInt8(length >> 8))
        bytes.append(UInt8(length & 0xFF))
        tree.appendPointer(of: node, to: &bytes)
    }

    static func prefix(_ kind: ChangeIndexKind, _ pointer: String) -> [UInt8] {
        let bytes = Array(pointer.utf8)
        var key: [UInt8] = [kind.rawValue, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)]
        key.reserveCapacity(3 + bytes.count + 8)
        key += bytes
        return key
    }

    /// The order of two keys (or prefixes) in LMDB's default order: negative when `a` comes first.
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in compare(a[...], b[...]) }
        }
    }

    /// ``compare(_:_:)-([UInt8],[UInt8])`` of two prefixes in place.
    static func compare(_ a: Slice<UnsafeBufferPointer<UInt8>>, _ b: Slice<UnsafeBufferPointer<UInt8>>) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let x = a.base.baseAddress, let y = b.base.baseAddress {
            let order = memcmp(x + a.startIndex, y + b.startIndex, common)
            if order != 0 { return Int(order) }
        }
        return a.count - b.count
    }

    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool { compare(a, b) < 0 }

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

    /// ``encodeChunk(_:key:into:)`` into an array of its own (a list's newest chunk, filled up).
    static func encode(_ chunk: Chunk, key: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: maxChunkBytes) { bytes, count in
            count = chunk.seqs.withUnsafeBufferPointer { seqs in
                key.withUnsafeBytes { key in encodeChunk(seqs[...], key: key, into: UnsafeMutableRawBufferPointer(bytes)) }
            }
        }
    }

    /// The most bytes ``encodeChunk(_:key:into:)`` writes: a version, three varints of up to ten
    /// bytes, a delta per seq after the first, the checksum.
    static let maxChunkBytes = 1 + 3 * 10 + (chunkCapacity - 1) * 10 + RecordChecksum.byteCount

    /// A chunk of `seqs` (1…``chunkCapacity``, rising) stored under `key`, written into `buffer`
    /// (at least ``maxChunkBytes``): version, count, last seq, the deltas after the first, the
    /// checksum seeded with the key. The build's lists are written a chunk at a time this way,
    /// with nothing allocated. Returns how many bytes it wrote.
    static func encodeChunk(_ seqs: Slice<UnsafeBufferPointer<UInt64>>, key: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        precondition(!seqs.isEmpty && seqs.count <= chunkCapacity && buffer.count >= maxChunkBytes)
        var count = 0
        func write(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                buffer[count] = UInt8(truncatingIfNeeded: value) | 0x80
                count += 1
                value >>= 7
            }
            buffer[count] = UInt8(value)
            count += 1
        }
        buffer[0] = chunkVersion
        count = 1
        write(UInt64(seqs.count))
        write(seqs.last!)
        var previous = seqs.first!
        for seq in seqs.dropFirst() {
            write(seq - previous)
            previous = seq
        }
        let sum = RecordChecksum.of(UnsafeRawBufferPointer(rebasing: buffer[..<count]), seed: RecordChecksum.seed(ofKey: key))
        withUnsafeBytes(of: sum.littleEndian) { UnsafeMutableRawBufferPointer(rebasing: buffer[count...]).copyMemory(from: $0) }
        return count + RecordChecksum.byteCount
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
