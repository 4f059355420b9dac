import NIOCore
import NIOEmbedded
@testable import ReelServer
import ReelTestSupport
import Testing

/// The waiting ``Outbox`` adds to ``ConnectionStateMachine``: a reader waits for room, which the
/// event loop's write of an answer frees, and an outbox that stops releases it.
@Suite(.timeLimit(.minutes(1))) struct OutboxTests {
    @Test func aReaderWaitsForRoomUntilTheEventLoopWritesAnAnswer() async throws {
        let channel = NIOAsyncTestingChannel()
        let outbox = Outbox(maxInFlight: 1, channel: channel)
        let first = await outbox.reserve()
        #expect(first == 0)
        let waiting = try await startSuspended("a reader of a full outbox") { await outbox.reserve() }
        outbox.fill(0, with: Array("a\n".utf8))
        await channel.testingEventLoop.run()  // the write, which frees the slot
        #expect(await waiting.value == 1)
        let written = try await channel.readOutbound(as: ByteBuffer.self)
        #expect(written.map { String(buffer: $0) } == "a\n")
    }

    @Test func anOutboxThatStopsReleasesAWaitingReader() async throws {
        let outbox = Outbox(maxInFlight: 1, channel: NIOAsyncTestingChannel())
        _ = await outbox.reserve()
        let waiting = try await startSuspended("a reader of a full outbox") { await outbox.reserve() }
        outbox.abort()
        #expect(await waiting.value == nil)
    }
}
