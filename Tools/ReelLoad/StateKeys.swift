import ArgumentParser
import Foundation

/// `--state-keys N`: a state of N keys before the measured run (merges of 4,000 keys at a time on a
/// connection of their own), so that checkpoints and the writer's copies are those of a large
/// state. Each key holds a small object (`{"name":…,"score":…,"tags":["a","b"]}`); the
/// dispatchers' own keys are beside them.
enum StateKeys {
    static let perMerge = 4_000

    static func add(_ count: Int, socket path: String) throws {
        var connection = try Connection(socket: path)
        defer { close(connection.fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var first = 0
        while first < count {
            let last = min(count, first + perMerge)
            connection.queue { line in
                line += Array(#"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"merge","payload":{"#.utf8)
                for key in first..<last {
                    if key > first { line.append(UInt8(ascii: ",")) }
                    line += Array("\"state\(key)\":{\"name\":\"user \(key)\",\"score\":\(key),\"tags\":[\"a\",\"b\"]}".utf8)
                }
                line += Array("}}}}\n".utf8)
            }
            try waitForAnswer(on: &connection, buffer: &buffer)
            first = last
        }
    }

    /// Sends what is queued and reads one answer, which must be a success.
    private static func waitForAnswer(on connection: inout Connection, buffer: inout [UInt8]) throws {
        var answer: String?
        var descriptor = pollfd(fd: connection.fd, events: 0, revents: 0)
        while answer == nil {
            try connection.write()
            descriptor.events = Int16(POLLIN) | (connection.wantsToWrite ? Int16(POLLOUT) : 0)
            guard poll(&descriptor, 1, 10_000) > 0 else { throw ValidationError("no answer to a merge of the state's keys for 10 s") }
            let alive = try buffer.withUnsafeMutableBytes { bytes in
                try connection.read(into: bytes) { line in answer = String(decoding: line, as: UTF8.self) }
            }
            guard alive else { throw ValidationError("the server closed the connection that adds the state's keys") }
        }
        guard let answer, answer.contains(#""result""#) else {
            throw ValidationError("a merge of the state's keys was refused: \(answer ?? "")")
        }
    }
}
