import ReelJSON

/// An action as a client dispatches it: a type, an optional JSON payload (`.null` when absent)
/// and the version of the payload's shape.
///
/// Types beginning with `@` are reserved for the store itself (see ``StoreAction``).
public struct Action: Sendable, Equatable {
    public var type: String
    public var payload: JSONValue
    /// The version of the payload's shape (``ActionDescription/version``). In a dispatch, `nil`
    /// is the latest the reducers declare for the type, and an older one is upcast to it on the
    /// way in. In a logged action, `nil` is version 1 (every action logged before its type had
    /// versions), and the writer logs the version it dispatched at, `nil` for 1, so one version
    /// has one form.
    public var version: Int?

    @inlinable
    public init(type: String, payload: JSONValue = .null, version: Int? = nil) {
        self.type = type
        self.payload = payload
        self.version = version
    }

    /// An action built from a typed payload: its type is `P.actionType`, its payload `P` as JSON.
    ///
    /// - Throws: ``ReducerError`` with code `.invalidPayload` when `payload` cannot be represented as JSON.
    public init<P: ActionPayload>(_ payload: P) throws(ReducerError) {
        do {
            self.init(type: P.actionType, payload: try JSONValueEncoder().encode(payload), version: P.version)
        } catch {
            throw ReducerError(.invalidPayload, "cannot encode '\(P.actionType)': \(error.message)")
        }
    }

    /// Whether the type is reserved for the store (starts with `@`).
    public var isReserved: Bool { type.utf8.first == UInt8(ascii: "@") }
}

/// The identity of whoever dispatched an action: the peer credentials of its socket connection
/// (`SO_PEERCRED`) and the executable it runs, or the current process for in-process dispatches.
public struct Peer: Sendable, Hashable {
    /// The longest ``exe`` kept, in UTF-8 bytes (Linux's `PATH_MAX`); a longer path is cut there.
    public static let maxExeLength = 4096

    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    /// The path of the peer's executable (`/proc/<pid>/exe`), read once when its connection was
    /// accepted; `nil` when unknown: unreadable (another user's process), gone by then, or a
    /// dispatch made in process (every such action would carry the same path).
    public var exe: String?

    /// - Parameter exe: The executable's path; cut to ``maxExeLength`` bytes if longer.
    public init(uid: UInt32, gid: UInt32, pid: Int32, exe: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.exe = exe.map { Self.capped($0) }
    }

    /// `path`, cut at a character boundary to at most ``maxExeLength`` UTF-8 bytes.
    public static func capped(_ path: String) -> String {
        guard path.utf8.count > maxExeLength else { return path }
        var bytes = 0
        var kept = String.UnicodeScalarView()
        for scalar in path.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= maxExeLength else { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// No known peer: used for actions imported from elsewhere.
    public static let unknown = Peer(uid: .max, gid: .max, pid: 0)
}

/// A point in time, as nanoseconds since 1970-01-01T00:00:00Z.
///
/// Stored in every envelope so that reducers that need "now" read it from the action, never from the
/// clock: replaying a log must give the same state today as on the day it was written.
public struct Timestamp: Sendable, Hashable, Comparable {
    public var nanosecondsSince1970: Int64

    public init(nanosecondsSince1970: Int64) {
        self.nanosecondsSince1970 = nanosecondsSince1970
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.nanosecondsSince1970 < rhs.nanosecondsSince1970
    }
}

/// An accepted action as it is logged: the action the middleware produced, stamped with its sequence
/// number, time and dispatcher. Envelopes are immutable once committed.
public struct ActionEnvelope: Sendable, Equatable {
    /// 1, 2, 3, … with no gaps.
    public var seq: UInt64
    public var action: Action
    public var time: Timestamp
    public var peer: Peer
    /// The key a client sent so that a retry after a lost acknowledgement is not applied twice.
    public var idempotencyKey: String?
    /// What the client said of the action's provenance (trace, correlation, cause, source);
    /// `nil` when it said nothing (a meta without members is stored and read as `nil`).
    public var meta: ActionMeta?

    // (Inlinable: every record a replay decodes is built here, from another module.)
    @inlinable
    public init(seq: UInt64, action: Action, time: Timestamp, peer: Peer, idempotencyKey: String? = nil, meta: ActionMeta? = nil) {
        self.seq = seq
        self.action = action
        self.time = time
        self.peer = peer
        self.idempotencyKey = idempotencyKey
        self.meta = meta?.isEmpty == true ? nil : meta
    }

    public var type: String { action.type }
    public var payload: JSONValue { action.payload }
    /// The version of the logged payload's shape: 1 unless the action says otherwise.
    public var version: Int { action.version ?? 1 }
}
