import ReelCore
import ReelJSON
import ReelStorage

/// A page of the log: what `history` reads.
public struct LogPage: Sendable {
    public var actions: [ActionEnvelope]
    /// The seq to ask for next when the page was cut by the limit; `nil` at the end of the range.
    public var next: UInt64?
}

/// Which logged actions `history` keeps: those that meet every condition given (none given:
/// every action). Each is a test of the action alone, made while the log is read.
public struct HistoryFilter: Sendable, Equatable {
    /// Only actions of these types; `nil` for every type.
    public var types: Set<String>?
    /// Only actions whose ``ActionMeta/correlationId`` is this; `nil` for any.
    public var correlationId: String?

    public init(types: Set<String>? = nil, correlationId: String? = nil) {
        self.types = types
        self.correlationId = correlationId
    }

    /// Whether it keeps every action.
    public var keepsEverything: Bool { types == nil && correlationId == nil }

    /// Whether `envelope` meets every condition.
    public func keeps(_ envelope: ActionEnvelope) -> Bool {
        if let types, !types.contains(envelope.type) { return false }
        if let correlationId, envelope.meta?.correlationId != correlationId { return false }
        return true
    }
}

/// The result of a what-if replay.
public struct WhatIf: Sendable {
    public var value: JSONValue
    /// Later actions that the reducers refused once the skipped ones were gone (their seq and the
    /// reason); each left the state unchanged.
    public var refused: [(seq: UInt64, reason: String)]
}

extension Timeline {
    /// The JSON value at `path` in the state at `seq`: for a part of the state, from that part of
    /// the nearest checkpoint and the actions that changed it since (``skeleton(of:at:)``) where
    /// it can, else from the whole state rebuilt.
    ///
    /// - Throws: ``StoreError`` `.pathNotFound` when nothing is at `path`.
    @_specialize(where State == JSONValue)
    public func value(at seq: UInt64, path: JSONPointer = .root) throws(StoreError) -> JSONValue {
        if !path.isRoot, let skeleton = try skeleton(of: path, at: seq) {
            guard let value = skeleton.value else { throw Self.nothing(at: path, seq: seq) }
            return value
        }
        return try Self.slice(try state(at: seq), path: path, seq: seq)
    }

    /// The JSON value at `path` in a state.
    public static func slice(_ state: State, path: JSONPointer, seq: UInt64) throws(StoreError) -> JSONValue {
        guard let value = try state.jsonValueOrThrow(seq: seq).value(at: path) else { throw nothing(at: path, seq: seq) }
        return value
    }

    static func nothing(at path: JSONPointer, seq: UInt64) -> StoreError {
        StoreError(.pathNotFound, "nothing at \(path.isRoot ? "\"\"" : path.description) in the state at seq \(seq)")
    }

    /// An RFC 6902 patch turning the state at `from` into the state at `to`, under `path`.
    ///
    /// Paths in the patch are absolute (they start with `path`). A slice that exists at only one of
    /// the two seqs gives an `add` or a `remove` of the whole slice; one that exists at neither is
    /// `.pathNotFound`.
    @_specialize(where State == JSONValue)
    public func diff(from: UInt64, to: UInt64, path: JSONPointer = .root) throws(StoreError) -> JSONPatch {
        let before = try state(at: from).jsonValueOrThrow(seq: from).value(at: path)
        let after = try state(at: to).jsonValueOrThrow(seq: to).value(at: path)
        switch (before, after) {
        case let (before?, after?):
            return JSONPatch(from: before, to: after).prefixed(with: path)
        case (nil, let after?):
            return JSONPatch([.add(path: path, value: after)])
        case (_?, nil):
            return JSONPatch([.remove(path: path)])
        case (nil, nil):
            throw StoreError(.pathNotFound, "nothing at \(path) at seq \(from) nor at seq \(to)")
        }
    }

    /// What the state would be at `to` had the actions in `skipping` never been dispatched. The log
    /// is not touched.
    @_specialize(where State == JSONValue)
    public func replay(to: UInt64, skipping: Set<UInt64>, path: JSONPointer = .root) throws(StoreError) -> WhatIf {
        let latest = try latestSeq()
        guard to <= latest else {
            throw StoreError(.seqOutOfRange, "seq \(to) is beyond the latest seq \(latest)")
        }
        let skipped = skipping.filter { $0 >= 1 && $0 <= to }
        guard let firstSkipped = skipped.min() else {
            return WhatIf(value: try Self.slice(try state(at: to), path: path, seq: to), refused: [])
        }
        var result = try reconstruct(at: firstSkipped - 1)
        result.refused = []
        try replay(from: firstSkipped, through: to, into: &result, skipping: skipped)
        return WhatIf(value: try Self.slice(result.state, path: path, seq: to), refused: result.refused)
    }

    /// Logged actions from `from` through `to`, optionally only those whose type is in `types`
    /// and whose meta carries `correlationId` (see ``HistoryFilter``), and only those that changed
    /// the value at `changed` (``changedSeqs(path:from:through:newestFirst:limit:)``), at most `limit` of them,
    /// oldest first (`next` the `from` of the following page) or newest first (`next` its `to`).
    @_specialize(where State == JSONValue)
    public func history(
        from: UInt64 = 1, to: UInt64? = nil, limit: Int = 100, types: Set<String>? = nil, correlationId: String? = nil,
        newestFirst: Bool = false, changed: JSONPointer? = nil
    ) throws(StoreError) -> LogPage {
        guard limit > 0 else { throw StoreError(.invalidArgument, "limit must be at least 1") }
        let filter = HistoryFilter(types: types, correlationId: correlationId)
        let last: UInt64
        if let to { last = to } else { last = try latestSeq() }
        let first = max(from, directory.metadata.origin + 1)  // (a bundle's history starts after its origin)
        if let changed {
            return try historyOfChanges(to: changed, from: first, through: last, limit: limit, filter: filter, newestFirst: newestFirst)
        }
        if newestFirst { return try historyNewestFirst(from: first, through: last, limit: limit, filter: filter) }
        var page = LogPage(actions: [], next: nil)
        do {
            try directory.forEachEnvelope(from: first, through: last) { envelope in
                if !filter.keeps(envelope) { return true }
                if page.actions.count == limit {
                    page.next = envelope.seq
                    return false
                }
                page.actions.append(envelope)
                return true
            }
        } catch let error as StorageError {
            throw StoreError(error)
        } catch {
            throw StoreError(.storage, "cannot read history: \(error)")
        }
        return page
    }

    /// `history` of the actions that changed `path`: pages of the change index's answers, read
    /// until `limit` of them pass the filter.
    private func historyOfChanges(
        to path: JSONPointer, from first: UInt64, through last: UInt64, limit: Int, filter: HistoryFilter, newestFirst: Bool
    ) throws(StoreError) -> LogPage {
        var page = LogPage(actions: [], next: nil)
        var (low, high) = (first, last)
        while low <= high {
            let found = try changedSeqs(path: path, from: low, through: high, newestFirst: newestFirst, limit: max(limit, 100))
            for seq in found.seqs {
                let envelope: ActionEnvelope?
                do { envelope = try directory.envelope(at: seq) } catch { throw StoreError(error) }
                guard let envelope else { throw StoreError(.storage, "action \(seq) is missing from the log") }
                if !filter.keeps(envelope) { continue }
                guard page.actions.count < limit else {
                    page.next = seq
                    return page
                }
                page.actions.append(envelope)
            }
            guard let next = found.next else { break }
            if newestFirst { high = next } else { low = next }
        }
        return page
    }

    /// `history` newest first: windows read forward from the end of the range backwards, each
    /// twice the last (up to a million seqs) while a filter leaves them sparse. `next` is the
    /// seq of the next older action kept, the `to` of the following page.
    private func historyNewestFirst(from first: UInt64, through last: UInt64, limit: Int, filter: HistoryFilter) throws(StoreError) -> LogPage {
        var page = LogPage(actions: [], next: nil)
        guard first <= last else { return page }
        var windowEnd = last
        var span = UInt64(limit)
        while true {
            let windowStart = windowEnd - min(span, windowEnd - first + 1) + 1
            var found: [ActionEnvelope] = []
            do {
                try directory.forEachEnvelope(from: windowStart, through: windowEnd) { envelope in
                    if !filter.keeps(envelope) { return true }
                    found.append(envelope)
                    return true
                }
            } catch let error as StorageError {
                throw StoreError(error)
            } catch {
                throw StoreError(.storage, "cannot read history: \(error)")
            }
            for envelope in found.reversed() {
                guard page.actions.count < limit else {
                    page.next = envelope.seq
                    return page
                }
                page.actions.append(envelope)
            }
            guard windowStart > first else { return page }
            windowEnd = windowStart - 1
            span = min(span * 2, 1 << 20)
        }
    }
}

extension StoreState {
    /// The state as JSON, or a storage error naming the seq (a state that cannot be written as JSON
    /// is a bug in its `Encodable` conformance, found at run time).
    public func jsonValueOrThrow(seq: UInt64) throws(StoreError) -> JSONValue {
        do {
            return try jsonValue()
        } catch {
            throw StoreError(.storage, "the state at seq \(seq) cannot be written as JSON: \(error.message)")
        }
    }
}
