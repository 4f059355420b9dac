import Foundation
import ReelCore

/// The order of the log, kept by an engine outside this process so that several daemons serve one
/// store (`reeld --shared-log`): each keeps its own data directory as a full local copy, and the
/// shared log decides which action gets which seq.
///
/// The interface is all a store needs from such an engine, so that engines other than PostgreSQL
/// can stand behind it:
/// - an **atomic, conditional append**: a group of entries with consecutive seqs goes in whole, and
///   only if its first seq is the log's next one and no entry claims an idempotency key already
///   claimed (``append(_:)`` answers ``SharedLogAppendOutcome/conflict`` otherwise, having written
///   nothing);
/// - **reading in order** after any seq (``entries(after:limit:)``) and the latest seq;
/// - a **wake-up** when others appended (``watch(_:)``), which may be late or missed: the store
///   also polls.
///
/// Every call blocks the calling thread (the store's writer thread) until the engine answers, and
/// throws ``SharedLogError`` when it cannot (unreachable, refused): nothing is then acknowledged.
/// An append that throws may or may not have been applied (a connection lost after the commit was
/// sent): the store treats it as not acknowledged, and the entries, if they were applied, reach it
/// by following like anyone else's.
public protocol SharedLog: AnyObject, Sendable {
    /// Where the log is, for people (logs, `stats`), without secrets.
    var location: String { get }

    /// Creates the log if it does not exist and checks it belongs to a store with this reducer.
    /// Returns the reducer identity the log was created with.
    func prepare(reducer: ReducerIdentity) throws(SharedLogError) -> ReducerIdentity

    /// Appends `entries` (consecutive seqs, the first one following the log's latest) atomically.
    func append(_ entries: [SharedLogEntry]) throws(SharedLogError) -> SharedLogAppendOutcome

    /// The entries after `seq`, in seq order, at most `limit` (fewer only at the log's end).
    func entries(after seq: UInt64, limit: Int) throws(SharedLogError) -> [SharedLogEntry]

    /// The log's latest seq (0 when it is empty).
    func latestSeq() throws(SharedLogError) -> UInt64

    /// Calls `wake` whenever others may have appended, with the latest seq when the engine says it
    /// (`nil` otherwise), from any thread, until ``close()``. Called once.
    func watch(_ wake: @escaping @Sendable (_ latestSeq: UInt64?) -> Void)

    /// Stops watching and lets go of connections. Later calls throw.
    func close()

    /// Starts this node's exclusive turn: until ``endExclusiveTurn()``, no other node's append
    /// takes effect (theirs wait, then find the seq taken), so what this node reads and then
    /// appends cannot lose the race. For a node that keeps losing to busier ones; optional (the
    /// default does nothing, and the race is then only retried).
    func beginExclusiveTurn() throws(SharedLogError)

    /// Ends the turn ``beginExclusiveTurn()`` started (if it did); never throws: a turn whose
    /// connection is gone has ended anyway.
    func endExclusiveTurn()
}

extension SharedLog {
    public func beginExclusiveTurn() throws(SharedLogError) {}
    public func endExclusiveTurn() {}
}

/// One action in the shared log.
public struct SharedLogEntry: Sendable, Equatable {
    public var seq: UInt64
    /// The action as the local log stores it (the storage format's record, with its checksum seeded
    /// by the seq), so every node stores the very same bytes.
    public var record: [UInt8]
    /// The action's type, for people reading the engine's table.
    public var type: String
    /// The idempotency key this entry claims: set on the first action of a dispatch that carried
    /// one. No two entries of the log claim the same key.
    public var claimedKey: String?

    public init(seq: UInt64, record: [UInt8], type: String, claimedKey: String? = nil) {
        self.seq = seq
        self.record = record
        self.type = type
        self.claimedKey = claimedKey
    }
}

/// What became of an append.
public enum SharedLogAppendOutcome: Sendable, Equatable {
    /// Every entry is in the log, durably (as durable as the engine makes its commits).
    case appended
    /// Nothing was written: another node appended at the first seq first, or claimed one of the keys.
    case conflict
}

/// The shared log could not answer.
public struct SharedLogError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not reachable now (connection refused or lost, timed out): worth retrying later.
        case unavailable
        /// Reachable, but not a log this store can use (another reducer, an unexpected schema,
        /// a malformed entry).
        case incompatible
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// A shared log's URL as people may see it (logs, `hello`, `stats`): with its password replaced by
/// `***`, wherever it is (`user:password@` or `?password=`). Text that is not a URL at all is
/// not shown: it might be a password pasted in the wrong place.
public func redactingPassword(inURL text: String) -> String {
    guard var components = URLComponents(string: text), components.scheme != nil else { return "(not a URL)" }
    if components.percentEncodedPassword != nil { components.percentEncodedPassword = "***" }
    if let items = components.queryItems, items.contains(where: { $0.name == "password" }) {
        components.queryItems = items.map { $0.name == "password" ? URLQueryItem(name: $0.name, value: "***") : $0 }
    }
    return components.string ?? "(not a URL)"
}
