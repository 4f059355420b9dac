/// When the next checkpoint is due: every `checkpointEvery` actions, or sooner once the actions
/// since the last checkpoint weigh `checkpointEveryBytes` in the log. Rebuilding the state at a
/// seq replays the actions after the checkpoint before it, and replaying costs about what the
/// records weigh; the byte bound keeps that cost bounded whatever the mix of small and large
/// actions, where a count alone would not.
///
/// And never more checkpoint than log: a checkpoint is due only once the actions since the last
/// one weigh at least as much as that checkpoint's state. So checkpoints never take more room in
/// the data file than the log itself (they are kept, never thinned: every seq stays as quick to
/// reach), and with a large state, whose checkpoint takes long to load anyway, the replay behind
/// any seq costs at most about what loading its checkpoint does.
///
/// The writer and the importer keep one each, fed with the bytes their commits wrote.
struct CheckpointSpacing: Sendable {
    private let everyActions: UInt64
    private let everyBytes: UInt64
    /// The seq of the last checkpoint taken (or asked for).
    private(set) var lastSeq: UInt64
    /// The bytes of the action records logged since then.
    private(set) var bytesSince: UInt64 = 0
    /// The size of the newest checkpoint's state, once it is encoded (0 until then).
    private(set) var lastCheckpointBytes: UInt64 = 0

    /// - Parameter lastSeq: the seq of the newest checkpoint already written.
    init(options: StoreOptions, lastSeq: UInt64) {
        everyActions = options.checkpointEvery
        everyBytes = options.checkpointEveryBytes
        self.lastSeq = lastSeq
    }

    /// Counts records that were logged.
    mutating func logged(bytes: Int) {
        bytesSince += UInt64(bytes)
    }

    /// Whether a checkpoint at `seq` is due. Never with `checkpointEvery` 0 (checkpoints only at
    /// shutdown).
    func isDue(at seq: UInt64) -> Bool {
        guard everyActions > 0, seq > lastSeq, bytesSince >= lastCheckpointBytes else { return false }
        return seq - lastSeq >= everyActions || (everyBytes > 0 && bytesSince >= everyBytes)
    }

    /// Notes a checkpoint taken at `seq`: the counts start again from it.
    mutating func checkpointed(at seq: UInt64) {
        lastSeq = seq
        bytesSince = 0
    }

    /// Notes the size of a checkpoint's encoded state, once known (the writer encodes them on
    /// another thread).
    mutating func encoded(stateBytes: Int) {
        lastCheckpointBytes = UInt64(stateBytes)
    }
}
