import ReelClient
import ReelJSON
import ReelTestSupport
import Testing

/// Reads one subscription of each mode until seq `total`, in the background, while a test
/// restarts or kills the daemon: the seqs actions mode delivered, the value updates, and the
/// states patch mode rebuilds. Each read has a 60 s deadline.
struct ModeCollectors {
    let actionSeqs: Task<[UInt64], any Error>
    let valueUpdates: Task<[SubscriptionUpdate], any Error>
    let patchedStates: Task<[Snapshot<JSONValue>], any Error>

    init(actions: ReelSubscription, values: ReelSubscription, patches: ReelSubscription, through total: UInt64) {
        actionSeqs = Task(executorPreference: TestThreads.shared) {
            try await withDeadline(.seconds(60), "every action up to \(total)") {
                var seqs: [UInt64] = []
                for try await update in actions {
                    seqs += update.actions?.map(\.seq) ?? []
                    if update.seq >= total { break }
                }
                return seqs
            }
        }
        valueUpdates = Task(executorPreference: TestThreads.shared) {
            try await withDeadline(.seconds(60), "the value \(total - 1)") {
                var updates: [SubscriptionUpdate] = []
                for try await update in values {
                    updates.append(update)
                    if update.seq >= total { break }
                }
                return updates
            }
        }
        patchedStates = Task(executorPreference: TestThreads.shared) {
            try await withDeadline(.seconds(60), "the state at \(total)") {
                var state = patches.startValue ?? .null
                var states: [Snapshot<JSONValue>] = []
                for try await update in patches {
                    try #require(update.patch).apply(to: &state)
                    states.append(Snapshot(seq: update.seq, value: state))
                    if update.seq >= total { break }
                }
                return states
            }
        }
    }
}
