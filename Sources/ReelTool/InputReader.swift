#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ReelJSON

/// Reads input files and stdin (`-`) for `dispatch -` and `import`: whole, or line by line in
/// chunks, so that a multi-gigabyte export streams through in constant memory.
enum InputReader {
    /// Reads the whole of `path` (`-` for stdin).
    static func readAll(path: String) throws(ToolError) -> [UInt8] {
        var bytes: [UInt8] = []
        try read(path: path) { chunk, _ in bytes.append(contentsOf: chunk) }
        return bytes
    }

    /// Calls `body` with each non-blank line of `path` (`-` for stdin) and its 1-based number.
    static func forEachLine(
        path: String, progress: (Int) -> Void = { _ in },
        _ body: (ArraySlice<UInt8>, Int) throws(ToolError) -> Void
    ) throws(ToolError) {
        try forEachLine(path: path, progress: progress) { (bytes, line, number) throws(ToolError) in try body(bytes[line], number) }
    }

    /// Calls `body` with each non-blank line of `path` (`-` for stdin) as the bytes it is in (the
    /// chunk read, or, for a line split between two chunks, the two halves joined), its range
    /// there, and its 1-based number: a caller that keeps many lines keeps one array per chunk,
    /// not a slice (and a reference count) per line.
    static func forEachLine(
        path: String, progress: (Int) -> Void = { _ in },
        _ body: ([UInt8], Range<Int>, Int) throws(ToolError) -> Void
    ) throws(ToolError) {
        var partial: [UInt8] = []
        var number = 0
        try read(path: path) { chunk, total throws(ToolError) in
            var start = chunk.startIndex
            while let newline = Self.newline(in: chunk, from: start) {
                number += 1
                if partial.isEmpty {
                    try emit(chunk, start..<newline, number, body)
                } else {
                    partial.append(contentsOf: chunk[start..<newline])
                    try emit(partial, partial.indices, number, body)
                    partial = []
                }
                start = newline + 1
            }
            partial.append(contentsOf: chunk[start...])
            progress(total)
        }
        if !partial.isEmpty {
            try emit(partial, partial.indices, number + 1, body)
        }
    }

    /// The index of the first newline of `chunk` at or after `start` (`memchr`, which reads a word
    /// or a vector at a time where a loop over the bytes reads one).
    private static func newline(in chunk: [UInt8], from start: Int) -> Int? {
        chunk.withUnsafeBytes { bytes -> Int? in
            guard start < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }

    private static func emit(
        _ bytes: [UInt8], _ line: Range<Int>, _ number: Int, _ body: ([UInt8], Range<Int>, Int) throws(ToolError) -> Void
    ) throws(ToolError) {
        let blank = bytes.withUnsafeBufferPointer { buffer in
            buffer[line].allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
        }
        if !blank { try body(bytes, line, number) }
    }

    /// Parses JSON, or says where it is wrong.
    static func json<Bytes: Collection<UInt8>>(_ bytes: Bytes, what: String) throws(ToolError) -> JSONValue {
        do {
            return try JSONValue(parsing: Array(bytes))
        } catch {
            throw ToolError("\(what) is not valid JSON: \(error.message)", exitStatus: ExitStatus.dataError)
        }
    }

    /// The size of a regular file, for progress; `nil` for stdin, pipes and the unknown.
    static func size(of path: String) -> Int? {
        guard path != "-" else { return nil }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// Reads `path` in 1 MiB chunks, telling `body` how many bytes were read so far.
    private static func read(path: String, _ body: ([UInt8], Int) throws(ToolError) -> Void) throws(ToolError) {
        let descriptor: Int32 = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ToolError("cannot open \(path): \(String(cString: strerror(errno)))", exitStatus: ExitStatus.dataError)
        }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ToolError("cannot read \(path): \(String(cString: strerror(errno)))", exitStatus: ExitStatus.dataError)
            }
            if count == 0 { return }
            total += count
            try body(Array(buffer[..<count]), total)
        }
    }
}
