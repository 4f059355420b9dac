import NIOCore
import NIOEmbedded
@testable import ReelServer
import Testing

/// ``Outbox`` carrying out its state machine's actions on a channel (NIO's `EmbeddedChannel`):
/// answers in request order, one write per batch of ready answers, nothing while the socket takes
/// no more, and the closing task taking over for good.
struct OutboxChannelTests {
    func lines(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            lines.append(String(buffer: buffer))
        }
        return lines
    }

    @Test func readyAnswersGoOutInOrderInOneWrite() throws {
        let channel = EmbeddedChannel()
        let outbox = Outbox(maxInFlight: 8, channel: channel)
        outbox.admit()
        guard case .slot(let a) = outbox.tryReserve(), case .slot(let b) = outbox.tryReserve() else {
            Issue.record("no slots")
            return
        }
        outbox.fill(b, with: Array("b\n".utf8))
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).isEmpty, "b waits for a")
        outbox.fill(a, with: Array("a\n".utf8))
        channel.embeddedEventLoop.run()
        #expect(try lines(channel) == ["a\nb\n"], "one write for both")
    }

    @Test func aSocketThatTakesNoMoreHoldsTheAnswersUntilItDoes() throws {
        let channel = EmbeddedChannel()
        let outbox = Outbox(maxInFlight: 1, channel: channel)
        outbox.admit()
        channel.isWritable = false
        guard case .slot(let slot) = outbox.tryReserve() else { Issue.record("no slot"); return }
        outbox.fill(slot, with: Array("a\n".utf8))
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).isEmpty)
        #expect(outbox.tryReserve() == .full, "the held answer keeps its slot")
        channel.isWritable = true
        outbox.socketBecameWritable()
        #expect(try lines(channel) == ["a\n"])
        #expect(outbox.tryReserve() == .slot(1))
    }

    @Test func afterTheHandOverTheClosingTaskWritesAndTheEventLoopDoesNot() throws {
        let channel = EmbeddedChannel()
        let outbox = Outbox(maxInFlight: 4, channel: channel)
        outbox.admit()
        guard case .slot(let slot) = outbox.tryReserve() else { Issue.record("no slot"); return }
        outbox.handOverToClosingTask()
        outbox.fill(slot, with: Array("bye\n".utf8), close: true)
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).isEmpty)
        let taken = outbox.takeReady()
        #expect(taken.slots.map(\.closesConnection) == [true])
        #expect(!outbox.writesUpdates)
    }
}
