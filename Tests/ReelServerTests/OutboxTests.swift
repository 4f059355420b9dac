@testable import ReelServer
import ReelTestSupport
import Testing

/// The waiting ``Outbox`` adds to ``ConnectionStateMachine``: a reader waits for room, and a writer
/// that stops releases it.
@Suite(.timeLimit(.minutes(1))) struct OutboxTests {
    @Test func aReaderWaitsForRoomUntilTheWriterTakesAnAnswer() async throws {
        let outbox = Outbox(maxInFlight: 1)
        let first = await outbox.reserve()
        #expect(first == 0)
        let waiting = Task { await outbox.reserve() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(outbox.takeReady().slots.isEmpty)
        outbox.fill(0, with: Array("a\n".utf8))
        #expect(outbox.takeReady().slots.count == 1)
        #expect(await waiting.value == 1)
    }

    @Test func aWriterThatStopsReleasesAWaitingReader() async throws {
        let outbox = Outbox(maxInFlight: 1)
        _ = await outbox.reserve()
        let waiting = Task { await outbox.reserve() }
        try await Task.sleep(for: .milliseconds(50))
        outbox.abort()
        #expect(await waiting.value == nil)
    }

    @Test func closingDrainsWhatIsOwedThenEnds() async {
        let outbox = Outbox(maxInFlight: 4)
        let slot = await outbox.reserve()
        outbox.close()
        #expect(!outbox.takeReady().drained)
        outbox.fill(slot!, with: Array("last\n".utf8))
        let ready = outbox.takeReady()
        #expect(ready.slots.count == 1)
        #expect(ready.drained)
    }
}

extension OutboxTests {
    /// A connection watches commits only once it has a subscription.
    @Test func watchingCommitsWaitsForTheFirstSubscription() async throws {
        let outbox = Outbox(maxInFlight: 4)
        let watcher = Task { await outbox.untilFirstSubscription(); return true }
        try await Task.sleep(for: .milliseconds(50))
        #expect(outbox.add(Subscription(id: "s1", path: .root, mode: .value, seq: 0, value: .null), limit: 1))
        #expect(await watcher.value)
        // Once there was one, it returns at once.
        await outbox.untilFirstSubscription()
    }

    @Test func aConnectionThatEndsOrIsCancelledStopsWaitingForASubscription() async throws {
        let ended = Outbox(maxInFlight: 4)
        let waiting = Task { await ended.untilFirstSubscription() }
        try await Task.sleep(for: .milliseconds(50))
        ended.abort()
        await waiting.value
        let cancelled = Outbox(maxInFlight: 4)
        let task = Task { await cancelled.untilFirstSubscription() }
        task.cancel()
        await task.value
    }
}
