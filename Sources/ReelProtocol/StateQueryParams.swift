import ReelJSON

// The params of the methods that read the state at some seq: `get`, `diff` and `replay`.
// Whether a seq exists (error 1006) or a path resolves (1005) is the store's to say; these types
// only check that the params are well formed.

/// The params of `get`: `{path?: "", at?: seq}`.
public struct GetParams: Sendable, Equatable {
    /// The part of the state to read; the root by default.
    public var path: JSONPointer
    /// The seq to read the state at; `nil` for the latest.
    public var at: UInt64?
    /// The branch to read instead of the main history.
    public var branch: String?

    /// - Parameters:
    ///   - path: The part of the state to read.
    ///   - at: The seq, or `nil` for the latest.
    ///   - branch: A branch to read instead of the main history.
    public init(path: JSONPointer = .root, at: UInt64? = nil, branch: String? = nil) {
        self.path = path
        self.at = at
        self.branch = branch
    }

    /// Reads and checks the params of a `get` call.
    ///
    /// - Parameter params: The request's `params`, `nil` when absent.
    /// - Throws: -32602 for a path that is not a JSON Pointer, an `at` that is not a seq, or an
    ///   unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        try self.init(params: params, method: Method.Get.name)
    }

    /// Reads the params of a method that takes those of `get` (`digest`), naming it in errors.
    init(params: JSONValue?, method: MethodName) throws(RPCError) {
        let reader = try ParamsReader(params, method: method, allowed: ["path", "at", "branch"])
        path = try reader.pointer("path")
        at = try reader.seq("at")
        branch = try reader.branch()
    }

    /// The params as a client sends them; `init(params:)` reads them back. Defaults are omitted.
    public var jsonValue: JSONValue {
        var members: JSONObject = [:]
        if !path.isRoot { members["path"] = .string(path.description) }
        if let at { members["at"] = JSONValue(seq: at) }
        if let branch { members["branch"] = .string(branch) }
        return .object(members)
    }
}

/// The params of `diff`: `{from: seq, to: seq, path?: ""}`.
///
/// `from` may be greater than `to`: the patch then undoes the changes in between.
public struct DiffParams: Sendable, Equatable {
    /// The seq of the state the patch starts from.
    public var from: UInt64
    /// The seq of the state the patch leads to.
    public var to: UInt64
    /// The part of the state to compare; the root by default.
    public var path: JSONPointer
    /// The branch whose states `from` and `to` are (the main history's when `nil`).
    public var branch: String?
    /// Another branch, whose state at `to` the patch leads to (two branches compared).
    public var toBranch: String?
    /// Whether the state at `to` is the main history's (with `branch` given): the patch then
    /// turns the branch's state into the main history's.
    public var toMain: Bool

    /// - Parameters:
    ///   - from: The seq the patch starts from.
    ///   - to: The seq the patch leads to.
    ///   - path: The part of the state to compare.
    ///   - branch: The branch of both states (`nil`: the main history).
    ///   - toBranch: Another branch for the state at `to`.
    ///   - toMain: The main history for the state at `to`.
    public init(from: UInt64, to: UInt64, path: JSONPointer = .root, branch: String? = nil, toBranch: String? = nil, toMain: Bool = false) {
        self.from = from
        self.to = to
        self.path = path
        self.branch = branch
        self.toBranch = toBranch
        self.toMain = toMain
    }

    /// Reads and checks the params of a `diff` call.
    ///
    /// - Parameter params: The request's `params`.
    /// - Throws: -32602 when `from` or `to` is missing or not a seq, for a path that is not a
    ///   JSON Pointer, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Diff.name, allowed: ["from", "to", "path", "branch", "toBranch", "toMain"])
        from = try reader.requiredSeq("from", method: Method.Diff.name)
        to = try reader.requiredSeq("to", method: Method.Diff.name)
        path = try reader.pointer("path")
        branch = try reader.branch()
        toBranch = try reader.branch("toBranch")
        switch reader["toMain"] {
        case nil, .bool(false)?: toMain = false
        case .bool(true)?: toMain = true
        case let other?: throw .invalidParams("params.toMain must be true or false, not \(other.described)")
        }
        if toMain && toBranch != nil { throw .invalidParams("params.toMain and params.toBranch exclude each other") }
    }

    /// The params as a client sends them; `init(params:)` reads them back.
    public var jsonValue: JSONValue {
        var members: JSONObject = ["from": JSONValue(seq: from), "to": JSONValue(seq: to)]
        if !path.isRoot { members["path"] = .string(path.description) }
        if let branch { members["branch"] = .string(branch) }
        if let toBranch { members["toBranch"] = .string(toBranch) }
        if toMain { members["toMain"] = true }
        return .object(members)
    }
}

/// The params of `replay`: `{to?: latest, skip: [seq], path?: ""}`.
///
/// An empty `skip` is taken (it answers what `get` at `to` would): scripts that build the list
/// need no special case for "nothing to skip".
public struct ReplayParams: Sendable, Equatable {
    /// The seq to replay up to; `nil` for the latest.
    public var to: UInt64?
    /// The actions to leave out, by seq (each 1 or more).
    public var skip: Set<UInt64>
    /// The part of the resulting state to return; the root by default.
    public var path: JSONPointer

    /// - Parameters:
    ///   - to: The seq to replay up to, or `nil` for the latest.
    ///   - skip: The seqs of the actions to leave out.
    ///   - path: The part of the state to return.
    public init(to: UInt64? = nil, skip: Set<UInt64>, path: JSONPointer = .root) {
        self.to = to
        self.skip = skip
        self.path = path
    }

    /// Reads and checks the params of a `replay` call.
    ///
    /// - Parameter params: The request's `params`.
    /// - Throws: -32602 when `skip` is missing or not an array of seqs of 1 or more, for a `to`
    ///   that is not a seq, a path that is not a JSON Pointer, or an unknown member.
    public init(params: JSONValue?) throws(RPCError) {
        let reader = try ParamsReader(params, method: Method.Replay.name, allowed: ["to", "skip", "path"])
        to = try reader.seq("to")
        guard let value = reader["skip"] else {
            throw .invalidParams("replay needs params.skip, the seqs of the actions to leave out, such as [3, 7]")
        }
        guard case .array(let elements) = value else {
            throw .invalidParams("params.skip must be an array of seqs, not \(value.described)")
        }
        var skip = Set<UInt64>()
        for (index, element) in elements.enumerated() {
            let seq = try readSeq(element, label: "params.skip[\(index)]")
            guard seq >= 1 else {
                throw .invalidParams("params.skip[\(index)] must be 1 or more: seq 0 is the initial state, not an action")
            }
            skip.insert(seq)
        }
        self.skip = skip
        path = try reader.pointer("path")
    }

    /// The params as a client sends them; `init(params:)` reads them back. `skip` is sorted, so
    /// equal params give equal bytes.
    public var jsonValue: JSONValue {
        var members: JSONObject = ["skip": .array(skip.sorted().map { JSONValue(seq: $0) })]
        if let to { members["to"] = JSONValue(seq: to) }
        if !path.isRoot { members["path"] = .string(path.description) }
        return .object(members)
    }
}
