import NIOCore
import NIOEmbedded
@testable import ReelClient
import Testing

/// The client's framing of what the daemon sends, on an `EmbeddedChannel`.
@Suite(.timeLimit(.minutes(1))) struct ServerLineDecoderTests {
    static func channel(maxLineLength: Int = 64) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ServerLineDecoder(maxLineLength: maxLineLength)))
        return channel
    }

    static func lines(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let line = try channel.readInbound(as: ByteBuffer.self) { lines.append(String(buffer: line)) }
        return lines
    }

    @Test func splitsLinesAcrossAndWithinReads() throws {
        let channel = try Self.channel()
        try channel.writeInbound(ByteBuffer(string: "{\"a\":1}\n{\"b\""))
        #expect(try Self.lines(channel) == [#"{"a":1}"#])
        try channel.writeInbound(ByteBuffer(string: ":2}\r\n\n{\"c\":3}\n"))
        #expect(try Self.lines(channel) == [#"{"b":2}"#, "", #"{"c":3}"#], "\\r\\n ends a line; an empty line is passed on (and skipped later)")
        #expect(try channel.finish().isClean)
    }

    @Test func aLineUpToTheLimitPassesAndALongerOneFails() throws {
        let channel = try Self.channel(maxLineLength: 8)
        try channel.writeInbound(ByteBuffer(string: "12345678\n"))
        #expect(try Self.lines(channel) == ["12345678"])
        // Arriving in pieces, a line is refused as soon as it is known to be too long.
        try channel.writeInbound(ByteBuffer(string: "12345"))
        #expect(throws: ServerLineDecoder.LineTooLong.self) {
            try channel.writeInbound(ByteBuffer(string: "67890"))
        }
        _ = try? channel.finish()
    }

    @Test func aPartialLineAtTheEndIsDropped() throws {
        let channel = try Self.channel()
        try channel.writeInbound(ByteBuffer(string: "{\"a\":1}\n{\"trunc"))
        #expect(try Self.lines(channel) == [#"{"a":1}"#])
        #expect(try channel.finish().isClean)
    }
}
