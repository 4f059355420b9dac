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
    private(set) var records = LogRecords()
    /// Where ``append(reading:)`` has a payload written.
    private var payloadBuffer: [UInt8] = []

    public init() {}

    /// The number of actions.
    public var count: Int { records.count }

    /// Appends `envelope` (without its idempotency key: it answers retries of a dispatch, and the
    /// log does not keep it).
    public mutating func append(_ envelope: ActionEnvelope) {
        var envelope = envelope
        envelope.idempotencyKey = nil
        records.append(envelope)
    }

    /// Appends the action `read` reads, which writes its payload in Reel's binary encoding into
    /// the buffer it is given (``ReelProtocol/LoggedActionLine/read(_:maxDepth:encodingPayloadInto:)``):
    /// `true`. `false`, nothing appended, when `read` answers `nil`. (The buffer is kept from one
    /// action to the next: one allocation per batch, not per payload.)
    public mutating func append(reading read: (inout [UInt8]) -> ActionEnvelope?) -> Bool {
        guard var envelope = read(&payloadBuffer) else { return false }
        envelope.idempotencyKey = nil
        payloadBuffer.withUnsafeBytes { records.append(envelope, binaryPayload: $0) }
        return true
    }
}
