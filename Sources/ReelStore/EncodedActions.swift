import ReelCore
import ReelStorage

/// Exported actions encoded as the log stores them, their records back to back in one buffer:
/// `reel import` encodes a batch of lines on a thread of its own while the importer folds the
/// batches before (``LogImporter/append(contentsOf:)``).
///
/// The importer reads each action back from its record, as a replay does (a stock action of a
/// plain shape straight into what the reducer applies, ``PreparedStockAction``): nothing but this
/// one buffer passes between the threads. Handed actions, values and records one by one, the
/// fold's thread spent a third of its time on their reference counts and frees, each on the
/// other core's cache lines.
public struct EncodedActions: Sendable {
    /// The records, back to back.
    private(set) var bytes: [UInt8] = []
    /// Each record's seq and where it ends in ``bytes``.
    private var records: [(seq: UInt64, end: Int)] = []

    public init() {}

    /// The number of actions.
    public var count: Int { records.count }

    /// Appends `envelope` (without its idempotency key: it answers retries of a dispatch, and the
    /// log does not keep it).
    public mutating func append(_ envelope: ActionEnvelope) {
        var envelope = envelope
        envelope.idempotencyKey = nil
        EnvelopeCodec.append(envelope, to: &bytes)
        records.append((envelope.seq, bytes.count))
    }

    /// Appends `envelope` with `payload` in place of its payload: the payload in Reel's binary
    /// encoding (``ReelProtocol/LoggedActionLine/readEncodingPayload(_:maxDepth:)``).
    public mutating func append(_ envelope: ActionEnvelope, binaryPayload payload: [UInt8]) {
        var envelope = envelope
        envelope.idempotencyKey = nil
        payload.withUnsafeBytes { EnvelopeCodec.append(envelope, binaryPayload: $0, to: &bytes) }
        records.append((envelope.seq, bytes.count))
    }

    /// The seq of the action at `index` and its record's place in ``bytes``.
    func record(at index: Int) -> (seq: UInt64, range: Range<Int>) {
        (records[index].seq, (index == 0 ? 0 : records[index - 1].end)..<records[index].end)
    }
}
