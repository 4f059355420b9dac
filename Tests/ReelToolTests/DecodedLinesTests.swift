import Foundation
import ReelTestSupport
import Synchronization
import Testing

@testable import ReelTool

/// Lines decoded on several threads come back in the order of the file, and a failure stops
/// everything after it: the threads change nothing but the time.
struct DecodedLinesTests {
    static func file(lines count: Int, in directory: borrowing TemporaryDirectory, blankEvery: Int = 0) throws -> String {
        let path = directory.sub("lines.txt")
        let text = (1...count).map { blankEvery > 0 && $0 % blankEvery == 0 ? " \t" : "line \($0)" }.joined(separator: "\n")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A decode that takes longer for some batches than others, so that decoders finish out of
    /// order. (The sleep waits for nothing: it only makes those batches slower, which is what the
    /// test needs; a busy machine shuffles them further, which is fine.)
    static let decode = { @Sendable (line: UnsafeRawBufferPointer, number: Int) throws(ToolError) -> String in
        if number % (DecodedLines.batchLines * 3) < 64 { usleep(50) }
        return String(decoding: line, as: UTF8.self)
    }

    @Test(arguments: [1, 2, 5])
    func linesComeInTheOrderOfTheFile(decoders: Int) throws {
        let directory = try TemporaryDirectory()
        let count = DecodedLines.batchLines * 9 + 17
        let path = try Self.file(lines: count, in: directory, blankEvery: 1_000)
        var seen: [(String, Int)] = []
        try DecodedLines.forEach(path: path, decoders: decoders, decode: Self.decode) { (value, number) throws(ToolError) in
            seen.append((value, number))
        }
        let expected = (1...count).filter { $0 % 1_000 != 0 }
        #expect(seen.map(\.1) == expected)
        #expect(seen.allSatisfy { $0.0 == "line \($0.1)" })
    }

    @Test(arguments: [1, 3])
    func aLineThatDoesNotDecodeIsThrownAfterEveryLineBeforeIt(decoders: Int) throws {
        let directory = try TemporaryDirectory()
        let bad = DecodedLines.batchLines * 4 + 100
        let path = try Self.file(lines: DecodedLines.batchLines * 8, in: directory)
        let decode = { @Sendable (line: UnsafeRawBufferPointer, number: Int) throws(ToolError) -> Int in
            if number == bad { throw ToolError("line \(number) is bad") }
            return number
        }
        var seen: [Int] = []
        #expect(throws: ToolError.self) {
            try DecodedLines.forEach(path: path, decoders: decoders, decode: decode) { (value, _) throws(ToolError) in
                seen.append(value)
            }
        }
        #expect(seen == Array(1..<bad))
    }

    @Test func aBodyThatThrowsStopsTheReading() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.file(lines: DecodedLines.batchLines * 40, in: directory)
        let decoded = Atomic(0)
        let decode = { @Sendable (line: UnsafeRawBufferPointer, number: Int) throws(ToolError) -> Int in
            decoded.add(1, ordering: .relaxed)
            return number
        }
        var seen = 0
        #expect(throws: ToolError.self) {
            try DecodedLines.forEach(path: path, decoders: 2, decode: decode) { (_, number) throws(ToolError) in
                seen += 1
                if number == 10 { throw ToolError("enough") }
            }
        }
        #expect(seen == 10)
        // The threads stop within the batches read ahead (they may still be finishing one).
        let bound = (DecodedLines.batchesAhead + 4) * DecodedLines.batchLines
        #expect(decoded.load(ordering: .relaxed) <= bound)
    }
}
