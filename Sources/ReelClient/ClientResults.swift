import ReelCore
import ReelJSON
import ReelProtocol

// The typed results of the protocol's methods, as the client hands them to callers.

/// Who the daemon is and what it offers: the result of `hello`, sent on every (re)connection.
public struct ServerHello: Sendable, Equatable {
    /// The server's name, `"reeld"`.
    public var server: String
    /// The daemon's version, such as `"0.1.0"`.
    public var version: String
    /// The protocol version the daemon speaks (1).
    public var protocolVersion: Int
    /// The latest seq when the daemon answered.
    public var seq: UInt64
    /// The reducer the store runs and its version (`reel.json` version `1` for the stock one).
    public var reducer: ReducerIdentity
    /// The optional features the daemon offers, by name (see `Capability`).
    public var capabilities: [String]

    /// Whether the daemon offers a feature.
    ///
    /// - Parameter capability: A capability of protocol 1.
    public func supports(_ capability: Capability) -> Bool {
        capabilities.contains(capability.rawValue)
    }
}

/// The answer to a `dispatch` of one action: its seq, durable on the daemon's disk.
public struct DispatchReceipt: Sendable, Equatable {
    /// The action's seq.
    public var seq: UInt64
    /// Whether the idempotency key had been used before: then nothing was applied now and `seq`
    /// is the seq the first dispatch with that key got.
    public var duplicate: Bool

    /// - Parameters:
    ///   - seq: The action's seq.
    ///   - duplicate: Whether this answers a retry.
    public init(seq: UInt64, duplicate: Bool = false) {
        self.seq = seq
        self.duplicate = duplicate
    }
}

/// The answer to a `dispatch` of a batch: the consecutive seqs its actions got, in order.
public struct BatchReceipt: Sendable, Equatable {
    /// The seqs, first to last; the n-th belongs to the n-th action.
    public var seqs: ClosedRange<UInt64>
    /// Whether the idempotency key had been used before (nothing was applied now).
    public var duplicate: Bool

    /// - Parameters:
    ///   - seqs: The seqs of the batch.
    ///   - duplicate: Whether this answers a retry.
    public init(seqs: ClosedRange<UInt64>, duplicate: Bool = false) {
        self.seqs = seqs
        self.duplicate = duplicate
    }
}

/// A value as it was at a seq: the result of `get`, and each element of a typed state stream.
public struct Snapshot<Value> {
    /// The seq whose state the value comes from.
    public var seq: UInt64
    /// The state, or the slice of it that was asked for.
    public var value: Value

    /// - Parameters:
    ///   - seq: The seq.
    ///   - value: The value at that seq.
    public init(seq: UInt64, value: Value) {
        self.seq = seq
        self.value = value
    }
}

extension Snapshot: Sendable where Value: Sendable {}
extension Snapshot: Equatable where Value: Equatable {}

/// One page of `history`: logged actions, oldest first.
public struct HistoryPage: Sendable, Equatable {
    /// The actions, with their seq, time and dispatcher.
    public var actions: [ActionEnvelope]
    /// The `from` of the next page, or `nil` when this page holds the last matching action.
    public var next: UInt64?

    /// - Parameters:
    ///   - actions: The actions of the page.
    ///   - next: The `from` of the next page, or `nil`.
    public init(actions: [ActionEnvelope], next: UInt64?) {
        self.actions = actions
        self.next = next
    }
}

/// The result of `replay`: what the state would be without the skipped actions.
public struct ReplayResult: Sendable, Equatable {
    /// The what-if value at the requested path.
    public var value: JSONValue
    /// Later actions that no longer applied without the skipped ones (each then changed nothing).
    public var refused: [RefusedAction]

    /// - Parameters:
    ///   - value: The what-if value.
    ///   - refused: The actions refused during the replay.
    public init(value: JSONValue, refused: [RefusedAction] = []) {
        self.value = value
        self.refused = refused
    }
}

/// An action a what-if replay left out because the reducer refused it: its seq and the reducer's
/// reason (the protocol module's type, shared with the maintenance results).
public typealias RefusedAction = SeqReason

/// Whether a request may be sent again when the connection drops before its answer arrives.
public enum ResendPolicy: Sendable {
    /// Send it again on the next connection: it changes nothing (a read), or the daemon recognises
    /// the repeat (a dispatch with an idempotency key).
    case resendAfterReconnect
    /// Fail it with ``ReelClientError/Code/connectionLost``: running it twice could do twice what
    /// was meant once, and whether the first one ran is unknown.
    case failIfConnectionLost
}
