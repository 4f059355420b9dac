import ReelJSON

/// Turns a payload of version ``from`` of an action type into one of version `from + 1`.
///
/// Upcasters are pure like reducers (a logged action is upcast again at every replay) and may
/// refuse a payload they cannot convert: the action is then refused as a reducer would refuse it.
public struct Upcaster: Sendable {
    /// The version of the payloads this reads.
    public var from: Int
    private let body: @Sendable (JSONValue) throws(ReducerError) -> JSONValue

    public init(from: Int, _ body: @escaping @Sendable (JSONValue) throws(ReducerError) -> JSONValue) {
        self.from = from
        self.body = body
    }

    public func callAsFunction(_ payload: JSONValue) throws(ReducerError) -> JSONValue {
        try body(payload)
    }
}

/// The versions of a store's action types and the upcasters between them, gathered once from the
/// reducers' ``ActionDescription``s. Only types with more than one version are kept, so a store
/// whose types are all at version 1 (the stock one) checks nothing per action.
public struct ActionVersions: Sendable {
    private var descriptions: [String: ActionDescription] = [:]

    public init(_ descriptions: [ActionDescription]) {
        for description in descriptions where description.version != 1 || !description.upcasters.isEmpty {
            self.descriptions[description.type] = description
        }
    }

    /// No type has a version other than 1.
    public var isEmpty: Bool { descriptions.isEmpty }

    /// The version the reducers read for `type`: 1 for a type without versions (or unknown).
    public func latest(of type: String) -> Int {
        descriptions[type]?.version ?? 1
    }

    /// Why the reducers cannot read logged actions of `type` at `version`, or `nil` when they can.
    /// An unknown type is the caller's to judge (the store handles reserved ones itself).
    public func problem(reading type: String, version: Int) -> String? {
        let latest = latest(of: type)
        if version == latest { return nil }
        if version > latest {
            return "version \(version) of '\(type)' is newer than this build reads (version \(latest))"
        }
        let readable = descriptions[type]?.readableVersions ?? [latest]
        if version < 1 { return "version \(version) of '\(type)' is not a version (versions start at 1)" }
        guard readable.contains(version) else {
            let missing = (version..<latest).first { from in !(descriptions[type]?.upcasters.contains { $0.from == from } ?? false) } ?? version
            return "'\(type)' has no upcaster from version \(missing) to \(missing + 1), so version \(version) cannot be read (this build reads \(Self.range(readable)))"
        }
        return nil
    }

    /// `action` as the reducers read it: its payload upcast from its version to the latest,
    /// stamped with that version (`nil` for 1, as the writer logs it).
    ///
    /// - Parameter version: The version `action` is at.
    /// - Throws: ``ReducerError`` `.invalidPayload` for a version that cannot be read; what an
    ///   upcaster throws.
    public func upcast(_ action: Action, from version: Int) throws(ReducerError) -> Action {
        let latest = latest(of: action.type)
        var upcast = action
        upcast.version = latest == 1 ? nil : latest
        guard version != latest else { return upcast }
        if let problem = problem(reading: action.type, version: version) { throw ReducerError(.invalidPayload, problem) }
        guard let description = descriptions[action.type] else { return upcast }
        for upcaster in description.upcasters where upcaster.from >= version && upcaster.from < latest {
            upcast.payload = try upcaster(upcast.payload)
        }
        return upcast
    }

    /// A dispatched action as the middleware and reducers read it: upcast from the version it
    /// names, or taken as the latest when it names none.
    public func upcastDispatched(_ action: Action) throws(ReducerError) -> Action {
        try upcast(action, from: action.version ?? latest(of: action.type))
    }

    /// A logged action as the reducers read it (the same envelope when its version is the latest).
    public func upcastLogged(_ envelope: ActionEnvelope) throws(ReducerError) -> ActionEnvelope {
        guard envelope.version != latest(of: envelope.type) else { return envelope }
        var upcast = envelope
        upcast.action = try self.upcast(envelope.action, from: envelope.version)
        return upcast
    }

    /// `1–3`, `2` or `1, 3`: versions as a message names them.
    static func range(_ versions: [Int]) -> String {
        guard let first = versions.first, let last = versions.last else { return "no version" }
        if first == last { return "version \(first)" }
        if last - first + 1 == versions.count { return "versions \(first)–\(last)" }
        return "versions " + versions.map(String.init).joined(separator: ", ")
    }
}
