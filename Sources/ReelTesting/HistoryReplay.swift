#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ReelCore
import ReelJSON

/// A slice of recorded history replayed through a reducer, checked step by step: what a test
/// written by `reel testgen` runs.
///
/// It starts from the state recorded before the slice's first action, folds each logged action as
/// a replay does (the payload upcast from the version it was logged at, then the reducers; the
/// store's own `@revert` restores the recorded state), and after each compares the state with the
/// recorded one: the one before, changed by the recorded change (a JSON Patch, so that each step
/// of the file is as long as what the action changed, not as the whole state). The first step
/// that differs throws a ``HistoryDivergence`` naming the seq, the action, and each differing
/// field with its expected and actual value.
///
/// ```swift
/// var replay = try HistoryReplay(RPGApp.definition(rules: 3), after: 100, state: #"{"character":…}"#)
/// try replay.apply(101, "rpg/attackEnemy", #"{"target":"orc"}"#, version: 2, time: 1795786754167044863,
///                  change: #"[{"op":"replace","path":"/enemies/orc/hp","value":3}]"#)
/// ```
public struct HistoryReplay<State: StoreState> {
    public let definition: StoreDefinition<State>
    /// The state the reducers made.
    public private(set) var state: State
    /// The state recorded after the last step.
    public private(set) var expected: JSONValue
    /// The parts compared after each step; the whole state when empty.
    public let paths: [JSONPointer]
    /// The last seq folded.
    public private(set) var seq: UInt64

    /// - Parameters:
    ///   - definition: the reducers, as the app builds them.
    ///   - seq: the seq the state was recorded at (the slice's first action is the next one).
    ///   - state: that state, as JSON text.
    ///   - paths: JSON Pointers of the parts to compare after each step; none: the whole state.
    public init(_ definition: StoreDefinition<State>, after seq: UInt64, state: String, paths: [String] = []) throws {
        try self.init(definition, after: seq, recorded: try JSONValue(parsing: state), paths: paths)
    }

    /// The same, with the state read from a JSON file (`reel testgen --state-file`): `file` is
    /// relative to the directory of `source`, the test's own `#filePath`.
    public init(
        _ definition: StoreDefinition<State>, after seq: UInt64, stateFile file: String, paths: [String] = [], source: StaticString = #filePath
    ) throws {
        var directory = "\(source)"
        if let slash = directory.lastIndex(of: "/") { directory = String(directory[..<slash]) } else { directory = "." }
        let path = file.hasPrefix("/") ? file : directory + "/" + file
        try self.init(definition, after: seq, recorded: try JSONValue(parsing: try Self.contents(of: path)), paths: paths)
    }

    private init(_ definition: StoreDefinition<State>, after seq: UInt64, recorded: JSONValue, paths: [String]) throws {
        self.definition = definition
        self.seq = seq
        self.state = try State(jsonValue: recorded)
        expected = recorded
        self.paths = try paths.map { path throws(JSONError) in try JSONPointer(path) }
    }

    /// Folds the action logged at `seq` and checks the state against the recorded one.
    ///
    /// - Parameters:
    ///   - type: the action's type; `payload` its payload as JSON text (`nil`: none).
    ///   - version: the payload's version as logged (`nil`: 1).
    ///   - time: when it was logged, in nanoseconds since 1970; `peer` the dispatcher's uid, gid
    ///     and pid (reducers may read both).
    ///   - change: what the action changed, recorded as a JSON Patch.
    public mutating func apply(
        _ seq: UInt64, _ type: String, _ payload: String? = nil, version: Int? = nil, time: Int64 = 0,
        peer: (uid: UInt32, gid: UInt32, pid: Int32) = (0, 0, 0), change: String
    ) throws {
        let action = Action(type: type, payload: try payload.map { text throws(JSONError) in try JSONValue(parsing: text) } ?? .null, version: version)
        let envelope = ActionEnvelope(
            seq: seq, action: action, time: Timestamp(nanosecondsSince1970: time), peer: Peer(uid: peer.uid, gid: peer.gid, pid: peer.pid)
        )
        try fold(envelope)
        try JSONPatch(JSONValue(parsing: change)).apply(to: &expected)
        try check(envelope.seq, type)
    }

    /// Folds one logged action, without checking: what ``apply(_:_:_:version:time:peer:change:)``
    /// does before comparing; the generator records what it changed. ``expected`` is left as it
    /// was: a caller folding this way follows the state alone (and restores with
    /// ``restore(_:to:)``).
    public mutating func fold(_ envelope: ActionEnvelope) throws {
        guard envelope.seq == seq + 1 else {
            throw HistoryReplayError("seq \(envelope.seq) follows seq \(seq): a slice of history has no gaps")
        }
        if case .revert(let to)? = try StoreAction(envelope.action) {
            // The store restores the state at `to` itself: nothing of the reducers to test. The
            // recorded change says what it became.
            throw HistoryReplayError("seq \(envelope.seq) is a @revert to \(to): restore it with revert(_:change:)")
        }
        let read = definition.versions.isEmpty && envelope.action.version == nil ? envelope : try definition.versions.upcastLogged(envelope)
        try definition.reducer.reduce(into: &state, action: read)
        seq = envelope.seq
    }

    /// Takes the store's `@revert` logged at `seq`: the state becomes the recorded one.
    public mutating func revert(_ seq: UInt64, change: String) throws {
        var restored = expected
        try JSONPatch(JSONValue(parsing: change)).apply(to: &restored)
        try restore(seq, to: restored)
    }

    /// The state after the action logged at `seq` is `restored` (a `@revert`'s).
    public mutating func restore(_ seq: UInt64, to restored: JSONValue) throws {
        guard seq == self.seq + 1 else {
            throw HistoryReplayError("seq \(seq) follows seq \(self.seq): a slice of history has no gaps")
        }
        state = try State(jsonValue: restored)
        expected = restored
        self.seq = seq
    }

    /// Compares the state with the recorded one (at ``paths``, or whole).
    private func check(_ seq: UInt64, _ type: String) throws {
        let actual = try state.jsonValue()
        var differences: [HistoryDivergence.Difference] = []
        if paths.isEmpty {
            differences = HistoryDivergence.differences(expected: expected, actual: actual, under: JSONPointer.root)
        } else {
            for path in paths {
                differences += HistoryDivergence.differences(expected: expected.value(at: path), actual: actual.value(at: path), under: path)
            }
        }
        guard differences.isEmpty else { throw HistoryDivergence(seq: seq, type: type, differences: differences) }
    }
}

/// The state after a recorded action is not what the reducers make of it now.
public struct HistoryDivergence: Error, CustomStringConvertible {
    /// One field that differs: `nil` for a value that is absent.
    public struct Difference: Sendable, Equatable {
        public var path: String
        public var expected: JSONValue?
        public var actual: JSONValue?
    }

    public var seq: UInt64
    public var type: String
    public var differences: [Difference]

    public init(seq: UInt64, type: String, differences: [Difference]) {
        (self.seq, self.type, self.differences) = (seq, type, differences)
    }

    /// How the state the reducers made after `seq` differs from the recorded one; `nil` when it
    /// does not.
    public init?(seq: UInt64, type: String, expected: JSONValue, actual: JSONValue) {
        let differences = Self.differences(expected: expected, actual: actual, under: JSONPointer.root)
        guard !differences.isEmpty else { return nil }
        self.init(seq: seq, type: type, differences: differences)
    }

    /// The most fields a description lists.
    static let listed = 10

    public var description: String {
        var lines = ["after seq \(seq) (\(type)) the state differs from the recorded one in \(differences.count) field\(differences.count == 1 ? "" : "s"):"]
        for difference in differences.prefix(Self.listed) {
            lines.append("  \(difference.path.isEmpty ? "(the whole state)" : difference.path): expected \(Self.show(difference.expected)), got \(Self.show(difference.actual))")
        }
        if differences.count > Self.listed { lines.append("  … and \(differences.count - Self.listed) more") }
        return lines.joined(separator: "\n")
    }

    private static func show(_ value: JSONValue?) -> String {
        guard let value else { return "nothing (absent)" }
        let text = value.jsonString
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    /// Each field where the two differ, from the patch that turns one into the other.
    static func differences(expected: JSONValue?, actual: JSONValue?, under base: JSONPointer) -> [Difference] {
        switch (expected, actual) {
        case (nil, nil): return []
        case (let expected?, let actual?):
            guard expected != actual else { return [] }
            return JSONPatch(from: expected, to: actual).operations.map { operation in
                let path = JSONPointer(tokens: base.tokens + operation.path.tokens)
                return Difference(path: path.description, expected: expected.value(at: operation.path), actual: actual.value(at: operation.path))
            }
        default:
            return [Difference(path: base.description, expected: expected, actual: actual)]
        }
    }
}

extension HistoryReplay {
    /// The bytes of a file (no Foundation in this module: a test target may not want it).
    static func contents(of path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw HistoryReplayError("cannot open the state file \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[..<read]
            if read < chunk.count { break }
        }
        guard ferror(file) == 0 else { throw HistoryReplayError("cannot read the state file \(path)") }
        return bytes
    }
}

/// A slice that cannot be replayed as given (a gap in its seqs, a `@revert` given as an action).
public struct HistoryReplayError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
