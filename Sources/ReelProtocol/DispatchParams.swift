import ReelCore
import ReelJSON

/// The params of `dispatch`: one action, or an atomic batch, with optional concurrency and retry
/// guards and the provenance to log with the actions.
///
/// ```
/// {"action": {"type": "set", "payload": {"path": "/a", "value": 1}}, "expectedSeq": 41}
/// {"actions": [{"type": "increment", "payload": {"path": "/n"}}, …], "idempotencyKey": "c7-0012"}
/// {"action": {"type": "reset"}, "meta": {"correlationId": "order-17", "source": "checkout"}}
/// ```
///
/// The two forms are answered differently — `{seq}` for `action`, `{seqs: […]}` for `actions`
/// even when it holds one action — so ``isBatch`` remembers which one the client used.
public struct DispatchParams: Sendable, Equatable {
    /// The most actions one batch may hold. The store commits at most this many actions in one
    /// transaction by default, and a larger atomic batch would hold the single writer for longer
    /// than every other client should wait. Over it: error 1007.
    public static let maxBatchSize = 10_000
    /// The longest idempotency key, in UTF-8 bytes. Keys are stored for every keyed dispatch, so
    /// they are meant to be ids (a UUID is 36 bytes), not documents.
    public static let maxIdempotencyKeyLength = 256
    /// (A constant: an array literal at the call would be allocated for every dispatch.)
    static let paramNames = ["action", "actions", "expectedSeq", "idempotencyKey", "meta", "branch"]

    /// The actions, in order; exactly one unless ``isBatch``. Set through the initializers, which
    /// keep the two consistent.
    public private(set) var actions: [Action]
    /// Whether the client sent `actions` (a batch) rather than `action`.
    public private(set) var isBatch: Bool
    /// Accept only if the latest seq equals this (optimistic concurrency); otherwise error 1003.
    public var expectedSeq: UInt64?
    /// A key that makes a retry return the first dispatch's result instead of applying it again.
    public var idempotencyKey: String?
    /// The provenance logged with each of the actions (trace, correlation, cause, source); `nil`
    /// for none. Its members are checked when read from a request (``ActionMeta/problem(with:as:)``).
    public var meta: ActionMeta?
    /// The branch the actions go to instead of the main history (``Method/BranchCreate``).
    public var branch: String?

    /// One action.
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - expectedSeq: The seq the client expects to be the latest, or `nil`.
    ///   - idempotencyKey: The retry key, or `nil`.
    ///   - meta: The provenance to log with it, or `nil`.
    public init(action: Action, expectedSeq: UInt64? = nil, idempotencyKey: String? = nil, meta: ActionMeta? = nil) {
        self.actions = [action]
        self.isBatch = false
        self.expectedSeq = expectedSeq
        self.idempotencyKey = idempotencyKey
        self.meta = meta?.isEmpty == true ? nil : meta
    }

    /// An atomic batch.
    ///
    /// - Parameters:
    ///   - batch: The actions, at least one.
    ///   - expectedSeq: The seq the client expects to be the latest, or `nil`.
    ///   - idempotencyKey: The retry key, or `nil`.
    ///   - meta: The provenance to log with each of them, or `nil`.
    public init(batch: [Action], expectedSeq: UInt64? = nil, idempotencyKey: String? = nil, meta: ActionMeta? = nil) {
        self.actions = batch
        self.isBatch = true
        self.expectedSeq = expectedSeq
        self.idempotencyKey = idempotencyKey
        self.meta = meta?.isEmpty == true ? nil : meta
    }

    /// Reads and checks the params of a `dispatch` call.
    ///
    /// - Parameter params: The request's `params`.
    /// - Throws: -32602 when neither or both of `action` and `actions` are given, for an empty
    ///   batch, a malformed action, a bad `expectedSeq`, `idempotencyKey` or `meta` (an unknown
    ///   member, one that is not a string or is longer than 256 bytes, a `traceparent` not in W3C
    ///   form), or an unknown member; 1007 for a batch of more than ``maxBatchSize`` actions.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Dispatch.name, allowed: Self.paramNames)
        switch (reader["action"], reader["actions"]) {
        case (nil, nil):
            throw .invalidParams(
                "dispatch needs either 'action' (one action) or 'actions' (an atomic batch), such as {\"action\": {\"type\": \"set\", \"payload\": …}}")
        case (_?, _?):
            throw .invalidParams("dispatch needs either 'action' or 'actions', not both")
        case (let action?, nil):
            actions = [try readAction(action, label: "params.action")]
            isBatch = false
        case (nil, let batch?):
            guard case .array(let elements) = batch else {
                throw .invalidParams("params.actions must be an array of actions, not \(batch.described)")
            }
            guard !elements.isEmpty else {
                throw .invalidParams("params.actions must hold at least one action")
            }
            guard elements.count <= Self.maxBatchSize else {
                throw RPCError(
                    code: RPCError.Code.tooLarge,
                    message: "a batch may hold at most \(Self.maxBatchSize) actions, not \(elements.count); split it into several dispatches",
                    data: ["limit": .int(Int64(Self.maxBatchSize))]
                )
            }
            var actions: [Action] = []
            actions.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                actions.append(try readAction(element, label: "params.actions[\(index)]"))
            }
            self.actions = actions
            isBatch = true
        }
        expectedSeq = try reader.seq("expectedSeq")
        idempotencyKey = try reader.string("idempotencyKey")
        if let key = idempotencyKey {
            guard !key.isEmpty else {
                throw .invalidParams("params.idempotencyKey must not be empty (omit it to dispatch without one)")
            }
            guard key.utf8.count <= Self.maxIdempotencyKeyLength else {
                throw .invalidParams(
                    "params.idempotencyKey is \(key.utf8.count) bytes long; the limit is \(Self.maxIdempotencyKeyLength) (use an id such as a UUID)")
            }
        }
        if let value = reader["meta"] {
            meta = try ActionMeta.read(params: value, label: "params.meta")
        } else {
            meta = nil
        }
        branch = try reader.branch()
        if branch != nil, idempotencyKey != nil {
            throw .invalidParams("params.idempotencyKey is not taken with params.branch: a branch's dispatches are not deduplicated")
        }
    }

    /// The params as a client sends them; `init(params:)` reads them back. A `null` payload is
    /// omitted, which reads back as `null`.
    public var jsonValue: JSONValue {
        func encode(_ action: Action) -> JSONValue {
            var members: JSONObject = ["type": .string(action.type)]
            if !action.payload.isNull { members["payload"] = action.payload }
            if let version = action.version { members["version"] = .int(Int64(version)) }
            return .object(members)
        }
        var members: JSONObject = [:]
        if isBatch {
            members["actions"] = .array(actions.map(encode))
        } else if let action = actions.first {
            members["action"] = encode(action)
        }
        if let expectedSeq { members["expectedSeq"] = JSONValue(seq: expectedSeq) }
        if let idempotencyKey { members["idempotencyKey"] = .string(idempotencyKey) }
        if let meta { members["meta"] = meta.jsonValue }
        if let branch { members["branch"] = .string(branch) }
        return .object(members)
    }
}
