// The names of protocol version 1: its number, its methods and the capabilities a server
// advertises in `hello`. They are wire contract (SPEC.md): add to them, never rename.

/// Constants of the wire protocol as a whole.
public enum WireProtocol {
    /// The protocol version this module speaks, sent as `protocol` in the `hello` result.
    public static let version = 1
    /// Every protocol version a client may ask for in `hello`.
    public static let supportedVersions = [1]
    /// The `server` member of the `hello` result.
    public static let serverName = "reeld"
    /// The `jsonrpc` member of every message.
    public static let jsonRPCVersion = "2.0"
    /// The longest request line a server accepts by default, in bytes, newline excluded (SPEC: 1 MiB).
    public static let defaultMaxLineLength = 1 << 20
    /// How deeply arrays and objects may nest in a request by default. The parser recurses once per
    /// level, so this bounds the stack a hostile line can use; states deeper than this are unusual.
    public static let defaultMaxDepth = 256
    /// The method of server-sent subscription notifications.
    public static let updateMethod = "update"
}

/// The methods a client may call. The raw value is the name on the wire.
public enum MethodName: String, Sendable, CaseIterable {
    /// Versions, capabilities, current seq.
    case hello
    /// One action or an atomic batch.
    case dispatch
    /// The state or a slice of it, now or at a seq.
    case get
    /// Standing request for changes at a path; answered, then followed by `update` notifications.
    case subscribe
    /// Ends a subscription.
    case unsubscribe
    /// Logged actions in a range.
    case history
    /// An RFC 6902 patch between the states at two seqs.
    case diff
    /// What the state would be without some actions; the log is not touched.
    case replay
    /// The daemon's counters.
    case stats
    /// The checkpoints beside the log (an addition to SPEC's methods).
    case checkpoints
    /// Replays a range of the log and compares it with its checkpoints (an addition).
    case verify
    /// Writes a consistent, owner-only copy of the data directory on the daemon's machine (an addition).
    case backup
    /// The first seq at which a condition on the state holds, found with the checkpoints (an addition).
    case bisect
    /// Checks the checksum of every stored record and reports every damaged one (an addition).
    case scan
    /// The SHA-256 of the state (or a slice) at a seq, to compare stores without sending it (an addition).
    case digest
}

extension MethodName {
    /// What the method needs the peer to be allowed to do; a daemon's access policy grants these.
    public var permission: Permission {
        switch self {
        case .dispatch: .dispatch
        case .stats, .verify, .backup, .scan: .admin
        case .hello, .get, .subscribe, .unsubscribe, .history, .diff, .replay, .checkpoints, .bisect, .digest: .read
        }
    }

    /// Whether a client may send the call again after reconnecting when its answer was lost:
    /// reads may; `backup` may not (it would find its own half-made copy in the way); a `dispatch`
    /// only with an idempotency key, which the client decides per call.
    public var isSafeToResend: Bool {
        switch self {
        case .hello, .get, .subscribe, .unsubscribe, .history, .diff, .replay, .stats, .checkpoints, .verify, .bisect, .scan, .digest:
            true
        case .dispatch, .backup: false
        }
    }
}

/// What a request needs the peer to be allowed to do.
public enum Permission: String, Sendable, CaseIterable {
    /// Reading the state and the log: `hello`, `get`, `subscribe`, `history`, `diff`, `replay`, …
    case read
    /// `dispatch`.
    case dispatch
    /// The operator's methods: `stats`, `verify`, `backup`, `scan`.
    case admin

    /// The permission a method needs (``MethodName/permission``).
    public init(for method: MethodName) {
        self = method.permission
    }
}

/// The capabilities a protocol-1 server advertises in the `hello` result.
///
/// Everything SPEC.md names for version 1 is listed, so a client can test for a feature by name
/// today and a later server can add (or, in another protocol version, drop) features without
/// clients guessing from version numbers.
public enum Capability: String, Sendable, CaseIterable {
    /// `dispatch` with `actions`: several actions, all accepted or none.
    case dispatchBatch = "dispatch.batch"
    /// `dispatch` with `expectedSeq` (optimistic concurrency, error 1003).
    case dispatchExpectedSeq = "dispatch.expectedSeq"
    /// `dispatch` with `idempotencyKey`: a retry after a lost acknowledgement is not applied twice.
    case dispatchIdempotency = "dispatch.idempotency"
    /// `subscribe` with `mode: "patch"`.
    case subscribePatch = "subscribe.patch"
    /// `subscribe` with `mode: "actions"`.
    case subscribeActions = "subscribe.actions"
    /// `subscribe` with `since`: resume without gaps.
    case subscribeSince = "subscribe.since"
    /// The `history` method.
    case history
    /// The `diff` method.
    case diff
    /// The `replay` method.
    case replay
    /// The `checkpoints` method.
    case checkpoints
    /// The `verify` method.
    case verify
    /// The `backup` method.
    case backup
    /// The `bisect` method.
    case bisect
    /// The `scan` method.
    case scan
    /// The `digest` method.
    case digest

    /// The names of every capability, in declaration order: what the `hello` result lists by default.
    public static let all: [String] = allCases.map(\.rawValue)
}
