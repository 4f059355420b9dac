import Foundation
import ReelCore
import ReelJSON
import ReelProtocol

/// The page's JSON API (docs/TIME-TRAVEL.md lists it) over a ``TimeTravelBackend``: each method
/// takes the request's query or body and returns the response's JSON. What the backend does not
/// offer directly (search, actions by seq, one action's change, the what-if diff, export) is made
/// here from what it does.
struct TimeTravelAPI: Sendable {
    let backend: any TimeTravelBackend
    /// What `APP shadow --json` printed, for the page to show (`reel ui --shadow-report`).
    var shadowReport: JSONValue?

    /// The most rows one request returns.
    static let maxRows = 1_000

    func info() async throws(UIError) -> JSONValue {
        var info: JSONObject = [
            "live": .bool(backend.isLive),
            "source": .string(backend.label),
            "reducer": .string(try await backend.reducer()),
            "seq": JSONValue(seq: try await backend.latestSeq()),
            "canDispatch": .bool(await backend.mayDispatch()),
            "canRevert": .bool(await backend.mayDispatch()),
            "shadow": .bool(shadowReport != nil),
        ]
        // A history made from a bundle starts after a seq: the page's slider and log start there.
        if let origin = try await backend.origin(), origin > 0 { info["origin"] = JSONValue(seq: origin) }
        return .object(info)
    }

    /// The shadow report `reel ui` was given.
    func shadow() throws(UIError) -> JSONValue {
        guard let shadowReport else { throw UIError(status: .notFound, message: "no shadow report: reel ui --shadow-report FILE shows one") }
        return shadowReport
    }

    /// Any read method of the protocol, by name, with its params (`null` for none): its result as
    /// the store answers it. A method that needs more than reading (`dispatch`, `backup`…) has a
    /// route of its own, or none.
    func call(_ name: String, _ params: JSONValue) async throws(UIError) -> JSONValue {
        guard let method = Method.named(name), method.permission == .read, !method.actsOnItsConnection else {
            throw UIError(status: .notFound, message: "no read method '\(name)' (the page calls /api/call/METHOD for a read method of the protocol)")
        }
        let call: RPCCall
        do {
            call = try RPCCall(method: name, params: params.isNull ? nil : params)
        } catch {
            throw UIError(refusal: error)
        }
        return try await answer(call.method, call)
    }

    private func answer<M: ProtocolMethod>(_ method: M.Type, _ call: RPCCall) async throws(UIError) -> JSONValue {
        try await backend.call(method, call.params(as: method)!).asJSON
    }

    /// A page of the log: `from`, `to`, `limit`, and the store's own filters, `type` (a comma-separated
    /// list), `changed` (a JSON Pointer: only the actions that changed the value there) and
    /// `order=desc` (newest first). `next`, when more match, is the `from` (or, newest first, the
    /// `to`) of the following page.
    func history(_ query: Query) async throws(UIError) -> JSONValue {
        let from = max(1, try query.seq("from") ?? 1)
        let to = try query.seq("to")
        if let to, from > to { throw .badRequest("from (\(from)) must not be greater than to (\(to))") }
        let limit = min(Self.maxRows, max(1, try query.int("limit") ?? 200), backend.historyPageSize)
        let branch = query.text("branch").flatMap { $0.isEmpty ? nil : $0 }
        let params = HistoryParams(
            from: from, to: to, limit: limit, types: query.types("type"), newestFirst: try query.newestFirst("order"),
            changed: try query.optionalPointer("changed"), branch: branch
        )
        let page = try await backend.call(Method.History.self, params)
        var answer: JSONObject = [
            "actions": .array(page.actions.map(\.wireJSON)), "latest": JSONValue(seq: try await backend.latestSeq(branch: branch)),
        ]
        if let next = page.next { answer["next"] = JSONValue(seq: next) }
        return .object(answer)
    }

    /// Every seq whose action matches all the filters given: types, the pointer whose value it
    /// changed, the peer's uid, a substring of the action's JSON. The store filters by types and
    /// by `changed` (its change index: only the matching actions are read); the rest is a scan
    /// of what those leave, page by page.
    func search(_ query: Query) async throws(UIError) -> JSONValue {
        let types = query.types("type")
        let changed = try query.optionalPointer("changed")
        let peer = try query.uid("peer")
        let text = query.text("text").flatMap { $0.isEmpty ? nil : Array($0.utf8) }
        let branch = query.branch
        let latest = try await backend.latestSeq(branch: branch)
        var seqs: [UInt64] = []
        var from: UInt64? = latest >= 1 ? 1 : nil
        while let start = from {
            let params = HistoryParams(
                from: start, to: latest, limit: min(Self.maxRows, backend.historyPageSize), types: types, changed: changed, branch: branch
            )
            let page = try await backend.call(Method.History.self, params)
            for envelope in page.actions {
                if let peer, envelope.peer.uid != peer { continue }
                if let text, !Self.contains(envelope.wireJSON.serialized(), text) { continue }
                seqs.append(envelope.seq)
            }
            from = page.next
        }
        return ["seqs": .array(seqs.map(JSONValue.init(seq:))), "latest": JSONValue(seq: latest)]
    }

    /// The actions at the seqs asked for, in that order; consecutive seqs are read as one range.
    func actions(_ query: Query) async throws(UIError) -> JSONValue {
        let seqs = try query.seqList("seqs")
        guard seqs.count <= Self.maxRows else { throw .badRequest("at most \(Self.maxRows) seqs at a time") }
        let branch = query.branch
        var found: [UInt64: ActionEnvelope] = [:]
        for range in Self.ranges(of: Set(seqs).sorted()) {
            for envelope in try await backend.history(from: range.lowerBound, to: range.upperBound, limit: range.count, types: nil, branch: branch) {
                found[envelope.seq] = envelope
            }
        }
        return ["actions": .array(seqs.compactMap { found[$0]?.wireJSON })]
    }

    func state(_ query: Query) async throws(UIError) -> JSONValue {
        let snapshot = try await backend.state(at: try query.seq("at"), path: try query.pointer("path"), branch: query.branch)
        return ["seq": JSONValue(seq: snapshot.seq), "value": snapshot.value]
    }

    /// One action and what it changed: the patch from the state before it to the state after.
    func show(_ query: Query) async throws(UIError) -> JSONValue {
        guard let seq = try query.seq("seq"), seq >= 1 else { throw .badRequest("show needs a seq from 1") }
        let branch = query.branch
        guard let action = try await backend.history(from: seq, to: seq, limit: 1, types: nil, branch: branch).first else {
            throw UIError(refusal: RPCError(code: RPCError.Code.seqOutOfRange, message: "there is no action at seq \(seq)"))
        }
        let patch = try await backend.diff(from: seq - 1, to: seq, path: JSONPointer(tokens: []), branch: branch)
        return ["action": action.wireJSON, "patch": patch.jsonValue, "old": await overwritten(by: patch, at: seq - 1, branch: branch)]
    }

    /// The patch from the state at `from` to that at `to`: both of `branch` (the main history's
    /// without), or `to` of `toBranch` (`main` for the main history).
    func diff(_ query: Query) async throws(UIError) -> JSONValue {
        guard let from = try query.seq("from"), let to = try query.seq("to") else { throw .badRequest("diff needs from and to") }
        let branch = query.branch
        let other = query.text("toBranch").flatMap { $0.isEmpty ? nil : $0 }
        let patch = try await backend.diff(
            from: from, to: to, path: try query.pointer("path"), branch: branch, toBranch: other == "main" ? nil : other,
            toMain: other == "main" && branch != nil
        )
        return ["patch": patch.jsonValue, "old": await overwritten(by: patch, at: from, branch: branch)]
    }

    /// What each operation of `patch` overwrote in the state at `seq`, where the patch starts, so
    /// the page shows a change `old → new` as `reel show` and `reel diff` print it. Only the part of
    /// the state holding every operation's parent is read (one object for an action that changes
    /// one member), not the whole state, which a click on each row of the log would read again;
    /// if it cannot be read, no old values.
    private func overwritten(by patch: JSONPatch, at seq: UInt64, branch: String? = nil) async -> JSONValue {
        let scope = Self.scope(of: patch)
        guard !patch.operations.isEmpty, let part = try? await backend.state(at: seq, path: scope, branch: branch).value else {
            return Self.old(patch.operations.map { _ in nil })
        }
        var document = part
        for token in scope.tokens.reversed() { document = .object([token: document]) }
        return Self.old(patch.overwrittenValues(in: document))
    }

    /// The deepest pointer above every path the patch edits or reads from.
    static func scope(of patch: JSONPatch) -> JSONPointer {
        var common: [String]?
        for operation in patch.operations {
            var parents = [operation.path.parent]
            if case .move(let from, _) = operation { parents.append(from.parent) }
            if case .copy(let from, _) = operation { parents.append(from.parent) }
            for parent in parents {
                let tokens = parent?.tokens ?? []
                common = common.map { Array(zip($0, tokens).prefix { $0.0 == $0.1 }.map(\.0)) } ?? tokens
            }
        }
        return JSONPointer(tokens: common ?? [])
    }

    /// Old values for the page, one per operation: `{"value": old}` (which may be `null`), or
    /// `null` where the operation overwrote nothing.
    static func old(_ values: [JSONValue?]) -> JSONValue {
        .array(values.map { $0.map { .object(["value": $0]) } ?? .null })
    }

    /// The state without the skipped actions, and the patch from the real state to it.
    func whatIf(_ body: JSONValue) async throws(UIError) -> JSONValue {
        guard case .array(let list)? = body["skip"] else { throw .badRequest("whatif needs {\"skip\": [seq…]}") }
        var skip = Set<UInt64>()
        for item in list {
            guard let seq = item.intValue.flatMap(UInt64.init(exactly:)), seq >= 1 else { throw .badRequest("skip holds seqs from 1, not \(item.jsonString)") }
            skip.insert(seq)
        }
        var at = try Self.seq(body["at"], "at") ?? 0
        if body["at"] == nil || body["at"]?.isNull == true { at = try await backend.latestSeq() }
        let real = try await backend.state(at: at, path: JSONPointer(tokens: []))
        let whatIf = try await backend.replay(at: at, skip: skip)
        let patch = JSONPatch(from: real.value, to: whatIf.value)
        return [
            "seq": JSONValue(seq: at), "value": whatIf.value, "patch": patch.jsonValue, "old": Self.old(patch.overwrittenValues(in: real.value)),
            "refused": .array(whatIf.refused.map { ["seq": JSONValue(seq: $0.seq), "reason": .string($0.reason)] }),
        ]
    }

    func bisect(_ body: JSONValue) async throws(UIError) -> JSONValue {
        guard case .string(let text)? = body["condition"] else { throw .badRequest("bisect needs {\"condition\": \"/path < 0\"}") }
        let condition: JSONCondition
        do {
            condition = try JSONCondition(parsing: text)
        } catch {
            throw .badRequest("\(error)")
        }
        let answer = try await backend.bisect(condition, through: try Self.seq(body["through"], "through"))
        return ["seq": answer.seq.map(JSONValue.init(seq:)) ?? .null, "latest": JSONValue(seq: answer.through), "probes": .int(Int64(answer.probes))]
    }

    func dispatch(_ body: JSONValue) async throws(UIError) -> JSONValue {
        guard case .string(let type)? = body["type"], !type.isEmpty else { throw .badRequest("dispatch needs {\"type\": …, \"payload\": …}") }
        guard !type.hasPrefix("@") else { throw .badRequest("store actions such as @revert are dispatched with revert") }
        try await requireDispatch()
        return ["seq": JSONValue(seq: try await backend.dispatch(Action(type: type, payload: body["payload"] ?? .null)))]
    }

    /// Appends a `@revert` action: the state goes back to `to`, the history stays.
    func revert(_ body: JSONValue) async throws(UIError) -> JSONValue {
        guard let to = try Self.seq(body["to"], "to") else { throw .badRequest("revert needs {\"to\": seq}") }
        try await requireDispatch()
        return ["seq": JSONValue(seq: try await backend.dispatch(StoreAction.revert(to: to).action))]
    }

    /// The actions `from...to` as NDJSON, as `reel export` writes them.
    func export(_ query: Query) async throws(UIError) -> [UInt8] {
        let latest = try await backend.latestSeq()
        var from = max(1, try query.seq("from") ?? 1)
        let to = min(latest, try query.seq("to") ?? latest)
        var bytes: [UInt8] = []
        while from <= to {
            let page = try await backend.history(from: from, to: to, limit: Self.maxRows, types: nil)
            guard let last = page.last else { break }
            for envelope in page {
                envelope.writeWire(into: &bytes)
                bytes.append(UInt8(ascii: "\n"))
            }
            from = last.seq + 1
        }
        return bytes
    }

    private func requireDispatch() async throws(UIError) {
        guard backend.isLive else { throw .forbidden("offline: a data directory opened read-only takes no dispatches") }
        guard await backend.mayDispatch() else { throw .forbidden("the daemon's access policy does not let this user dispatch") }
    }

    static func seq(_ value: JSONValue?, _ name: String) throws(UIError) -> UInt64? {
        guard let value, !value.isNull else { return nil }
        guard let seq = value.intValue.flatMap(UInt64.init(exactly:)) else { throw .badRequest("\(name) must be a seq, not \(value.jsonString)") }
        return seq
    }

    static func ranges(of sorted: [UInt64]) -> [ClosedRange<UInt64>] {
        var ranges: [ClosedRange<UInt64>] = []
        for seq in sorted {
            if let last = ranges.last, last.upperBound + 1 == seq {
                ranges[ranges.count - 1] = last.lowerBound...seq
            } else {
                ranges.append(seq...seq)
            }
        }
        return ranges
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}

/// A request's query parameters, read with clear errors.
struct Query: Sendable {
    let parameters: [String: String]

    func text(_ name: String) -> String? { parameters[name] }

    /// The branch a read is of (`branch=NAME`); `nil` for the main history.
    var branch: String? { parameters["branch"].flatMap { $0.isEmpty ? nil : $0 } }

    func seq(_ name: String) throws(UIError) -> UInt64? {
        guard let text = parameters[name], !text.isEmpty else { return nil }
        guard let seq = UInt64(text) else { throw .badRequest("\(name) must be a seq, not \(text)") }
        return seq
    }

    func int(_ name: String) throws(UIError) -> Int? {
        guard let text = parameters[name], !text.isEmpty else { return nil }
        guard let value = Int(text) else { throw .badRequest("\(name) must be a whole number, not \(text)") }
        return value
    }

    func uid(_ name: String) throws(UIError) -> UInt32? {
        guard let text = parameters[name], !text.isEmpty else { return nil }
        guard let value = UInt32(text) else { throw .badRequest("\(name) must be a uid, not \(text)") }
        return value
    }

    func seqList(_ name: String) throws(UIError) -> [UInt64] {
        guard let text = parameters[name], !text.isEmpty else { return [] }
        var seqs: [UInt64] = []
        for item in text.split(separator: ",") {
            guard let seq = UInt64(item) else { throw .badRequest("\(name) holds seqs, not \(item)") }
            seqs.append(seq)
        }
        return seqs
    }

    /// A comma-separated list of action types; `nil` when absent or empty (every type).
    func types(_ name: String) -> Set<String>? {
        guard let text = parameters[name] else { return nil }
        let types = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        return types.isEmpty ? nil : types
    }

    /// `desc` (newest first) or `asc`, the default.
    func newestFirst(_ name: String) throws(UIError) -> Bool {
        switch parameters[name] {
        case nil, "", "asc": return false
        case "desc": return true
        case let other?: throw .badRequest("\(name) must be asc or desc, not \(other)")
        }
    }

    /// A JSON Pointer when the parameter is given (empty: the root), `nil` when it is not.
    func optionalPointer(_ name: String) throws(UIError) -> JSONPointer? {
        guard parameters[name] != nil else { return nil }
        return try pointer(name)
    }

    func pointer(_ name: String) throws(UIError) -> JSONPointer {
        guard let text = parameters[name], !text.isEmpty else { return JSONPointer(tokens: []) }
        do {
            return try JSONPointer(text)
        } catch {
            throw .badRequest("\(name) is not a JSON Pointer: \(error)")
        }
    }
}
