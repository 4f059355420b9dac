import NIOCore
import NIOEmbedded
import ReelFraming
import Testing

/// Framing of newline-delimited messages, with the line limit and the mid-line timeout.
struct LineFramingHandlerTests {
    func makeChannel(limit: Int = 16, timeout: TimeAmount = .seconds(5)) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(LineFramingHandler(maxLineLength: limit), MidLineStallHandler(timeout: timeout))
        return channel
    }

    func send(_ channel: EmbeddedChannel, _ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    func lines(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let buffer = try channel.readInbound(as: ByteBuffer.self) {
            lines.append(String(buffer: buffer))
        }
        return lines
    }

    @Test func splitsLinesAcrossAndWithinReads() throws {
        let channel = try makeChannel()
        try send(channel, "{\"a\":1}\n{\"b\"")
        #expect(try lines(channel) == ["{\"a\":1}"])
        try send(channel, ":2}\r\n\n[3]\n")
        #expect(try lines(channel) == ["{\"b\":2}", "[3]"])
        _ = try channel.finish()
    }

    @Test func aLineAtTheLimitPassesAndOneByteMoreFails() throws {
        let channel = try makeChannel(limit: 4)
        try send(channel, "abcd\n")
        #expect(try lines(channel) == ["abcd"])
        #expect(throws: FramingError.lineTooLong(limit: 4)) { try send(channel, "abcde\n") }
        // Nothing after the failure is read.
        try send(channel, "ok\n")
        #expect(try lines(channel).isEmpty)
    }

    /// Found by fuzzing: a line of exactly the limit ended by "\r\n" was accepted in one read but
    /// refused when the "\r" arrived before the "\n". How the bytes are split must not matter.
    @Test func aLineAtTheLimitEndedByCRLFPassesHoweverItIsSplit() throws {
        for split in 1...6 {
            let channel = try makeChannel(limit: 4)
            let text = Array("abcd\r\nef\n".utf8)
            try channel.writeInbound(ByteBuffer(bytes: text[..<split]))
            try channel.writeInbound(ByteBuffer(bytes: text[split...]))
            #expect(try lines(channel) == ["abcd", "ef"], "split after \(split) bytes")
        }
        let channel = try makeChannel(limit: 4)
        try send(channel, "abcd\r")
        #expect(throws: FramingError.lineTooLong(limit: 4)) { try send(channel, "x") }
    }

    @Test func anOverlongLineFailsBeforeItsNewlineArrives() throws {
        let channel = try makeChannel(limit: 8)
        try send(channel, "12345678")
        #expect(throws: FramingError.lineTooLong(limit: 8)) { try send(channel, "9") }
    }

    @Test func aPeerStalledMidLineIsCutOffButAnIdleOneIsNot() throws {
        let channel = try makeChannel(timeout: .seconds(5))
        try send(channel, "{\"ok\":true}\n")
        #expect(try lines(channel) == ["{\"ok\":true}"])
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        try channel.throwIfErrorCaught()  // idle between lines: fine

        try send(channel, "{\"half")
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.throwIfErrorCaught()
        try send(channel, "\":")  // more of the same line does not restart the clock
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: FramingError.stalledMidLine(after: .seconds(5))) { try channel.throwIfErrorCaught() }
    }

    @Test func finishingALineCancelsTheStallTimer() throws {
        let channel = try makeChannel(timeout: .seconds(5))
        try send(channel, "[1,")
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try send(channel, "2]\n")
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        try channel.throwIfErrorCaught()
        #expect(try lines(channel) == ["[1,2]"])
    }

    @Test func aStreamOfCompleteLinesNeverTimesOutEvenIfReadsEndMidLine() throws {
        let channel = try makeChannel(timeout: .seconds(5))
        for i in 0..<20 {
            // Every read completes the previous line and starts the next one.
            try send(channel, "\(i)]\n[")
            channel.embeddedEventLoop.advanceTime(by: .seconds(2))
            try channel.throwIfErrorCaught()
        }
        #expect(try lines(channel).count == 20)
    }
}
