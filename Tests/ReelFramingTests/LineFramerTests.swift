import NIOCore
import ReelFraming
import Testing

/// The framing rules on their own: the same lines however the bytes are split into reads.
struct LineFramerTests {
    func frame(_ text: String, splits: [Int], limit: Int) -> (lines: [String], refused: Bool) {
        var framer = LineFramer(maxLineLength: limit)
        let bytes = Array(text.utf8)
        var lines: [String] = []
        var start = 0
        for end in splits + [bytes.count] where end >= start {
            var buffer = ByteBuffer(bytes: bytes[start..<end])
            let read = framer.read(&buffer)
            lines += read.lines.map { String(buffer: $0) }
            if read.refused { return (lines, true) }
            start = end
        }
        return (lines, false)
    }

    @Test func everySplitFramesTheSameLines() {
        let text = "{\"a\":1}\r\n\nabcdefgh\r\nxy\n\r\nlast"
        let whole = frame(text, splits: [], limit: 8)
        #expect(whole.lines == ["{\"a\":1}", "abcdefgh", "xy"])
        #expect(!whole.refused)
        for first in 0...text.utf8.count {
            for second in first...text.utf8.count {
                let split = frame(text, splits: [first, second], limit: 8)
                #expect(split.lines == whole.lines && split.refused == whole.refused, "split at \(first) and \(second)")
            }
        }
    }

    @Test func aLineOverTheLimitIsRefusedHoweverItArrives() {
        let text = "ok\n123456789\nnever"
        for at in 0...text.utf8.count {
            let result = frame(text, splits: [at], limit: 8)
            #expect(result.lines == ["ok"], "split at \(at)")
            #expect(result.refused, "split at \(at)")
        }
    }
}
