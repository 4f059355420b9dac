// The names of protocol version 1: its number, the permissions and the capabilities a server
// advertises in `hello` (the methods are ``Method``'s). They are wire contract (docs/REFERENCE.md): add to them, never rename.

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
    /// The longest request line a server accepts by default, in bytes, newline excluded (1 MiB, docs/REFERENCE.md).
    public static let defaultMaxLineLength = 1 << 20
    /// How deeply arrays and objects may nest in a request by default. The parser recurses once per
    /// level, so this bounds the stack a hostile line can use; states deeper than this are unusual.
    public static let defaultMaxDepth = 256
    /// The method of server-sent subscription notifications.
    public static let updateMethod = "update"
}

/// What a request needs the peer to be allowed to do.
public enum Permission: String, Sendable, CaseIterable {
    /// Reading the state and the log: `hello`, `get`, `subscribe`, `history`, `diff`, `replay`, …
    case read
    /// `dispatch`.
    case dispatch
    /// The operator's methods: `stats`, `verify`, `backup`, `scan`.
    case admin

    /// The permission a method needs (``ProtocolMethod/permission``).
    public init(for method: any ProtocolMethod.Type) {
        self = method.permission
    }
}

/// The capabilities a protocol-1 server advertises in the `hello` result.
///
/// Every feature of version 1 is listed, so a client can test for a feature by name
/// today and a later server can add (or, in another protocol version, drop) features without
/// clients guessing from version numbers.
public enum Capability: String, Sendable, CaseIterable {
    /// `dispatch` with `actions`: several actions, all accepted or none.
    case dispatchBatch = "dispatch.batch"
    /// `dispatch` with `expectedSeq` (optimistic concurrency, error 1003).
    case dispatchExpectedSeq = "dispatch.expectedSeq"
    /// `dispatch` with `idempotencyKey`: a retry after a lost acknowledgement is not applied twice.
    case dispatchIdempotency = "dispatch.idempotency"
    /// `dispatch` with `meta` (traceparent, correlationId, causationId, source), logged with the
    /// actions; `history` with `correlationId`.
    case dispatchMeta = "dispatch.meta"
    /// Actions with `version`: the version of the payload's shape, upcast by the store when
    /// older than its reducers read; logged actions with `version` when it is not 1; `describe`
    /// with `versions`.
    case dispatchVersion = "dispatch.version"
    /// `subscribe` with `mode: "patch"`.
    case subscribePatch = "subscribe.patch"
    /// `subscribe` with `mode: "actions"`.
    case subscribeActions = "subscribe.actions"
    /// `subscribe` with `since`: resume without gaps.
    case subscribeSince = "subscribe.since"
    /// `subscribe` with `shared: true`: the updates of a shared feed, which name the feed.
    case subscribeShared = "subscribe.shared"
    /// What the `hello` result lists by default: every feature above, in declaration order, then the
    /// name of every method of ``Method/all`` added after protocol 1's first ones
    /// (``ProtocolMethod/isCapability``), so a client can test for a method by name.
    public static let all: [String] = allCases.map(\.rawValue)
        + Method.all.filter { $0.isCapability }.map { $0.name.rawValue }
}
