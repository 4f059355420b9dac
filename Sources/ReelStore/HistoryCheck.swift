import ReelCore
import ReelJSON
import ReelStorage

/// What `check-history` finds: for every (type, version) the log holds, how many of its actions
/// the store's reducers read (upcast from their version, then folded in order from the initial
/// state) and which they cannot.
public struct HistoryCheck: Sendable {
    /// One (type, version) of the log.
    public struct Entry: Sendable {
        public var type: String
        public var version: Int
        /// How many actions of the log have this type and version.
        public var actions: UInt64 = 0
        /// How many of them fail: refused by an upcaster or the reducers, or not readable at all
        /// (``problem``).
        public var failures: UInt64 = 0
        /// The first failing seqs, ascending (at most ``HistoryCheck/seqsKept``).
        public var seqs: [UInt64] = []
        /// The first few distinct reasons given.
        public var reasons: [String] = []
        /// Why no action of this type and version can be read, if so (a type no reducer handles,
        /// a version newer than the reducers read, one without upcasters to the latest).
        public var problem: String?

        public var readable: Bool { failures == 0 }
    }

    /// How many failing seqs an entry names; its count tells the rest.
    public static let seqsKept = 20
    /// How many distinct reasons an entry keeps.
    public static let reasonsKept = 3

    /// The actions folded: the whole log.
    public var actions: UInt64
    /// Every (type, version) of the log, sorted by type and version.
    public var entries: [Entry]

    /// Whether every action of the log was read.
    public var readable: Bool { entries.allSatisfy(\.readable) }
}

extension Timeline {
    /// Folds the whole log from the initial state with this timeline's reducers, upcasting each
    /// action from its version, and tells for each (type, version) which actions fail. An action
    /// of a type no reducer handles counts as failing (a replay would leave it out in silence).
    ///
    /// - Parameter progress: Called now and then with the seq reached.
    @_specialize(where State == JSONValue)
    public func checkHistory(progress: ((UInt64) -> Void)? = nil) throws(StoreError) -> HistoryCheck {
        let latest = try latestSeq()
        var entries: [TypeVersion: HistoryCheck.Entry] = [:]
        var last: TypeVersion?
        let definition = self.definition
        let origin = try self.origin()
        var result = Reconstruction(seq: latest, state: origin.state, checkpointSeq: nil, skippedCheckpoints: [], replayed: 0, refused: [])
        try replay(from: origin.seq + 1, through: latest, into: &result, skipping: [], progress: progress) { envelope, error in
            // Most actions repeat the previous one's type and version: one comparison each.
            let key: TypeVersion
            if let last, last.version == envelope.version, last.type == envelope.type {
                key = last
            } else {
                key = TypeVersion(type: envelope.type, version: envelope.version)
                last = key
            }
            var entry = entries[key] ?? HistoryCheck.Entry(
                type: key.type, version: key.version, problem: definition.problem(reading: key.type, version: key.version)
            )
            entry.actions += 1
            if let reason = error?.message ?? entry.problem {
                entry.failures += 1
                if entry.seqs.count < HistoryCheck.seqsKept { entry.seqs.append(envelope.seq) }
                if entry.reasons.count < HistoryCheck.reasonsKept, !entry.reasons.contains(reason) { entry.reasons.append(reason) }
            }
            entries[key] = entry
        }
        let sorted = entries.values.sorted { ($0.type, $0.version) < ($1.type, $1.version) }
        return HistoryCheck(actions: latest, entries: sorted)
    }
}

private struct TypeVersion: Hashable {
    var type: String
    var version: Int
}
