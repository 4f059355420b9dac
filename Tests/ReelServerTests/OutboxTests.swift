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
        let waiting = try await startSuspended("a reader of a full outbox") { await outbox.reserve() }
        #expect(outbox.takeReady().slots.isEmpty)
        outbox.fill(0, with: Array("a\n".utf8))
        #expect(outbox.takeReady().slots.count == 1)
        #expect(await waiting.value == 1)
    }

    @Test func aWriterThatStopsReleasesAWaitingReader() async throws {
        let outbox = Outbox(maxInFlight: 1)
        _ = await outbox.reserve()
        let waiting = try await startSuspended("a reader of a full outbox") { await outbox.reserve() }
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
