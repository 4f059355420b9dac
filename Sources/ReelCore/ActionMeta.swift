/// What a client says of where an action comes from, stored with it in the log: the trace it was
/// dispatched in (a W3C `traceparent`), the id tying it to other actions and messages of one
/// piece of work (`correlationId`), what caused it (`causationId`: a seq written as a string, or
/// an id of the caller's) and who sent it, in the caller's words (`source`).
///
/// Each member is optional; a meta without any member is no meta (``ActionEnvelope/meta`` `nil`).
/// The store keeps them as given and never interprets them, except `history`'s `correlationId`
/// filter, which compares them.
public struct ActionMeta: Sendable, Hashable {
    /// The longest value of a member, in UTF-8 bytes: these are ids, stored with every action.
    public static let maxLength = 256

    /// The members, in the order of their names (the order JSON writes them in, and the order of
    /// their bits in a stored record).
    public enum Member: String, CaseIterable, Sendable {
        case causationId, correlationId, source, traceparent
    }

    /// The W3C Trace Context `traceparent` of the span the action was dispatched in:
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`.
    public var traceparent: String? {
        get { storage.traceparent }
        set { self[.traceparent] = newValue }
    }
    /// An id shared by the actions (and other messages) of one piece of work.
    public var correlationId: String? {
        get { storage.correlationId }
        set { self[.correlationId] = newValue }
    }
    /// What caused the action: the seq of an earlier action as a string, or an id of the caller's.
    public var causationId: String? {
        get { storage.causationId }
        set { self[.causationId] = newValue }
    }
    /// Who sent it, in the caller's words (a service, a job, a screen).
    public var source: String? {
        get { storage.source }
        set { self[.source] = newValue }
    }

    /// The values behind one reference, replaced whole when one changes: an envelope spends 8
    /// bytes on its meta rather than 64, which every envelope decoded in a replay would carry,
    /// most of them without meta.
    private final class Storage: Sendable {
        let causationId: String?
        let correlationId: String?
        let source: String?
        let traceparent: String?

        init(causationId: String?, correlationId: String?, source: String?, traceparent: String?) {
            self.causationId = causationId
            self.correlationId = correlationId
            self.source = source
            self.traceparent = traceparent
        }
    }

    private var storage: Storage

    public init(traceparent: String? = nil, correlationId: String? = nil, causationId: String? = nil, source: String? = nil) {
        storage = Storage(causationId: causationId, correlationId: correlationId, source: source, traceparent: traceparent)
    }

    public subscript(member: Member) -> String? {
        get {
            switch member {
            case .causationId: storage.causationId
            case .correlationId: storage.correlationId
            case .source: storage.source
            case .traceparent: storage.traceparent
            }
        }
        set {
            storage = Storage(
                causationId: member == .causationId ? newValue : storage.causationId,
                correlationId: member == .correlationId ? newValue : storage.correlationId,
                source: member == .source ? newValue : storage.source,
                traceparent: member == .traceparent ? newValue : storage.traceparent
            )
        }
    }

    public static func == (lhs: ActionMeta, rhs: ActionMeta) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.causationId == rhs.causationId && lhs.correlationId == rhs.correlationId && lhs.source == rhs.source
                && lhs.traceparent == rhs.traceparent)
    }

    public func hash(into hasher: inout Hasher) {
        for member in Member.allCases { hasher.combine(self[member]) }
    }

    /// Whether no member is set.
    public var isEmpty: Bool { traceparent == nil && correlationId == nil && causationId == nil && source == nil }

    /// The members that are set, in ``Member`` order, with their values.
    public var members: [(member: Member, value: String)] {
        Member.allCases.compactMap { member in self[member].map { (member, $0) } }
    }

    /// Why `value` cannot be the member `member` ("is 300 bytes long; the limit is 256", …), to
    /// follow the member's name in a message; `nil` when it can.
    public static func problem(with value: String, as member: Member) -> String? {
        let length = value.utf8.count
        if length > maxLength {
            return "is \(length) bytes long; the limit is \(maxLength)"
        }
        if member == .traceparent, !isTraceparent(value) {
            return "must be a W3C traceparent, 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags> in lowercase hex, "
                + "neither id all zeros"
        }
        return nil
    }

    /// Whether `text` is a `traceparent` of W3C Trace Context version 00: `00-` · trace id (32
    /// lowercase hex digits, not all zero) · `-` · parent id (16, not all zero) · `-` · flags (2).
    public static func isTraceparent(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 55, bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "0"),
            bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-")
        else { return false }
        func isHex(_ range: Range<Int>) -> Bool {
            bytes[range].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
        }
        func isZero(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { $0 == UInt8(ascii: "0") } }
        return isHex(3..<35) && isHex(36..<52) && isHex(53..<55) && !isZero(3..<35) && !isZero(36..<52)
    }
}
