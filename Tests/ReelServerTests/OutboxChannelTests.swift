import NIOCore
import NIOEmbedded
@testable import ReelServer
import ReelStore
import Testing

/// ``Outbox`` carrying out its state machine's actions on a channel (NIO's `EmbeddedChannel`):
/// answers in request order, one write per batch of ready answers, nothing while the socket takes
/// no more, and the close after the last answer.
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

    @Test func anAnswerThatClosesIsWrittenAfterThoseBeforeItThenTheChannelCloses() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/reel-test")).wait()
        let outbox = Outbox(maxInFlight: 4, channel: channel)
        guard case .slot(let first) = outbox.tryReserve(), case .slot(let closing) = outbox.tryReserve() else {
            Issue.record("no slots")
            return
        }
        outbox.fill(closing, with: Array("bye\n".utf8), close: true)
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).isEmpty, "it waits for the answer before it")
        #expect(channel.isActive)
        outbox.fill(first, with: Array("a\n".utf8))
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).joined() == "a\nbye\n")
        #expect(!channel.isActive, "closed after the closing answer")
        #expect(!outbox.writesUpdates)
    }

    /// The outbox encodes into memory it keeps from write to write; a write the channel still
    /// holds must come out as it was written, whatever is encoded after it (a large answer, which
    /// is not kept, then dispatches' answers, encoded as they are written).
    @Test func answersWrittenOneAfterTheOtherKeepTheirBytes() throws {
        let channel = EmbeddedChannel()
        let outbox = Outbox(maxInFlight: 4, channel: channel)
        let large = String(repeating: "x", count: 100_000) + "\n"
        var expected: [String] = []
        for round in 0..<4 {
            guard case .slot(let first) = outbox.tryReserve(), case .slot(let second) = outbox.tryReserve() else {
                Issue.record("no slots")
                return
            }
            outbox.fill(first, with: Array((round == 1 ? large : "line \(round)\n").utf8))
            let settled = SettledDispatch(
                id: .int(Int64(round)), isBatch: false, expectedSeq: nil, outcome: .success(DispatchResult(seqs: UInt64(round + 1)...UInt64(round + 1)))
            )
            outbox.fill(second, with: .dispatch(settled))
            channel.embeddedEventLoop.run()
            expected.append((round == 1 ? large : "line \(round)\n") + #"{"jsonrpc":"2.0","id":\#(round),"result":{"seq":\#(round + 1)}}"# + "\n")
        }
        // Read only now: every write was still held by the channel when the next was encoded.
        #expect(try lines(channel) == expected)
    }

    @Test func theEndOfInputClosesOnceEverythingOwedIsWritten() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/reel-test")).wait()
        let outbox = Outbox(maxInFlight: 4, channel: channel)
        guard case .slot(let slot) = outbox.tryReserve() else { Issue.record("no slot"); return }
        outbox.close()
        channel.embeddedEventLoop.run()
        #expect(channel.isActive, "an answer is owed")
        outbox.fill(slot, with: Array("last\n".utf8))
        channel.embeddedEventLoop.run()
        #expect(try lines(channel).joined() == "last\n")
        #expect(!channel.isActive)

        let idle = EmbeddedChannel()
        try idle.connect(to: SocketAddress(unixDomainSocketPath: "/reel-test")).wait()
        let nothingOwed = Outbox(maxInFlight: 4, channel: idle)
        nothingOwed.close()
        idle.embeddedEventLoop.run()
        #expect(!idle.isActive, "nothing owed: closed at once")
    }
}
