import ReelClient
import ReelTestSupport

/// `writers` tasks, each dispatching `each` increments of `/n` through `client`, every one with
/// a fresh idempotency key: the load of the restart and crash tests.
struct KeyedWriters {
    let writers: Int
    let each: Int
    /// Yields once per answered dispatch.
    let acknowledged: AsyncStream<Void>
    /// Ends when every dispatch is answered, with how many were answered `duplicate`.
    let outcome: Task<Int, any Error>

    init(client: ReelClient, writers: Int, each: Int) {
        self.writers = writers
        self.each = each
        let (acknowledged, acknowledge) = AsyncStream.makeStream(of: Void.self)
        self.acknowledged = acknowledged
        outcome = Task(executorPreference: TestThreads.shared) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<writers {
                    group.addTask {
                        var duplicates = 0
                        for _ in 0..<each {
                            let receipt = try await client.dispatch(Stock.increment(), idempotencyKey: ReelClient.makeIdempotencyKey())
                            if receipt.duplicate { duplicates += 1 }
                            acknowledge.yield()
                        }
                        return duplicates
                    }
                }
                return try await group.reduce(0, +)
            }
        }
    }

    /// Returns once `count` dispatches have been answered.
    func waitForAcknowledgements(_ count: Int) async {
        var seen = 0
        for await _ in acknowledged {
            seen += 1
            if seen == count { return }
        }
    }
}
