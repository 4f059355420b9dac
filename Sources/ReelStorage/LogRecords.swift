import ReelCore

/// Log records (``EnvelopeCodec``'s, exactly the bytes LMDB's `log` database holds), back to back
/// in one buffer, each with its seq: a group's actions on their way through the journal and into
/// LMDB, a batch of `reel import`'s.
///
/// One buffer for many records, not an array each: the store's writer encodes a group into one
/// allocation, the journal's applier frees one per group, and `reel import`'s fold appends each
/// record it folded to a buffer it keeps from one commit to the next.
public struct LogRecords: Sendable {
    /// The records, back to back.
    public private(set) var bytes: [UInt8] = []
    /// Each record's seq and where it ends in ``bytes``.
    private var entries: [(seq: UInt64, end: Int)] = []

    public init() {}

    /// The number of records.
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    /// The seq of the first record and of the last.
    public var firstSeq: UInt64? { entries.first?.seq }
    public var lastSeq: UInt64? { entries.last?.seq }
    /// The size of the records, in bytes.
    public var byteCount: Int { bytes.count }

    /// The seq of the record at `index`.
    public func seq(at index: Int) -> UInt64 { entries[index].seq }

    /// Where the record at `index` lies in ``bytes``.
    public func range(at index: Int) -> Range<Int> {
        (index == 0 ? 0 : entries[index - 1].end)..<entries[index].end
    }

    /// Calls `body` with each record's seq and bytes, in order.
    public func forEach<Failure: Error>(_ body: (UInt64, UnsafeRawBufferPointer) throws(Failure) -> Void) throws(Failure) {
        // (`withUnsafeBytes` rethrows untyped: the failure travels in a `Result`.)
        try bytes.withUnsafeBytes { all in
            Result { () throws(Failure) in
                var start = 0
                for entry in entries {
                    try body(entry.seq, UnsafeRawBufferPointer(rebasing: all[start..<entry.end]))
                    start = entry.end
                }
            }
        }.get()
    }

    /// Calls `body` with the bytes of the record at `index`.
    public func withRecord<Value, Failure: Error>(
        at index: Int, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let range = range(at: index)
        return try bytes.withUnsafeBytes { all in
            Result { () throws(Failure) in try body(UnsafeRawBufferPointer(rebasing: all[range])) }
        }.get()
    }

    /// The records' actions, decoded (checksums checked), in order.
    /// - Throws: ``StorageError`` `.corrupt`, naming the seq, for the first record that does not decode.
    public func envelopes() throws(StorageError) -> [ActionEnvelope] {
        var envelopes: [ActionEnvelope] = []
        envelopes.reserveCapacity(count)
        try forEach { (seq, record) throws(StorageError) in envelopes.append(try EnvelopeCodec.decode(seq: seq, from: record)) }
        return envelopes
    }

    /// The record at `index`, as an array of its own (for tests and checks; readers take
    /// ``withRecord(at:_:)``).
    public subscript(index: Int) -> [UInt8] { Array(bytes[range(at: index)]) }

    /// Reserves room for `byteCount` bytes of `count` records.
    public mutating func reserveCapacity(bytes byteCount: Int, records count: Int) {
        bytes.reserveCapacity(byteCount)
        entries.reserveCapacity(count)
    }

    /// Appends `envelope`'s record, under its seq.
    public mutating func append(_ envelope: ActionEnvelope) {
        EnvelopeCodec.append(envelope, to: &bytes)
        entries.append((envelope.seq, bytes.count))
    }

    /// Appends the records of `envelopes`, in order: room for all of them reserved from the first
    /// one's size (a group's actions are mostly alike), so that a group grows its buffer once or
    /// twice rather than at every doubling.
    public mutating func append(contentsOf envelopes: [ActionEnvelope]) {
        guard let first = envelopes.first else { return }
        let start = bytes.count
        append(first)
        guard envelopes.count > 1 else { return }
        let firstSize = bytes.count - start
        bytes.reserveCapacity(bytes.count + firstSize * (envelopes.count - 1) * 5 / 4)
        entries.reserveCapacity(entries.count + envelopes.count - 1)
        for envelope in envelopes.dropFirst() { append(envelope) }
    }

    /// Appends the record of `envelope` with `payload`, already in Reel's binary encoding, in
    /// place of its payload (``EnvelopeCodec/append(_:binaryPayload:to:)``).
    public mutating func append(_ envelope: ActionEnvelope, binaryPayload payload: UnsafeRawBufferPointer) {
        EnvelopeCodec.append(envelope, binaryPayload: payload, to: &bytes)
        entries.append((envelope.seq, bytes.count))
    }

    /// Appends a record encoded elsewhere, as it is.
    public mutating func append(seq: UInt64, record: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: record)
        entries.append((seq, bytes.count))
    }

    /// Appends `other`'s records after these.
    public mutating func append(contentsOf other: LogRecords) {
        guard !other.isEmpty else { return }
        // Shared rather than copied, unless room was reserved for more.
        if isEmpty, bytes.capacity < other.bytes.count {
            self = other
            return
        }
        let shift = bytes.count
        bytes.append(contentsOf: other.bytes)
        entries.reserveCapacity(entries.count + other.entries.count)
        for entry in other.entries { entries.append((entry.seq, entry.end + shift)) }
    }

    /// Removes the first `k` records.
    public mutating func removeFirst(_ k: Int) {
        guard k > 0 else { return }
        guard k < count else { return removeAll() }
        let cut = entries[k - 1].end
        bytes.removeFirst(cut)
        entries.removeFirst(k)
        for index in entries.indices { entries[index].end -= cut }
    }

    /// Removes every record.
    public mutating func removeAll(keepingCapacity: Bool = false) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
        entries.removeAll(keepingCapacity: keepingCapacity)
    }
}

extension LogRecords: Equatable {
    public static func == (lhs: LogRecords, rhs: LogRecords) -> Bool {
        lhs.bytes == rhs.bytes && lhs.entries.elementsEqual(rhs.entries) { $0.seq == $1.seq && $0.end == $1.end }
    }
}
