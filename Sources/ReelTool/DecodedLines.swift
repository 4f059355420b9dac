import Dispatch
import Foundation

/// The lines of a file decoded on threads of their own, ahead of the caller, who takes them in
/// order: `reel import` reads each line and encodes it as the log stores it while it folds and
/// writes the ones before. One thread reads and splits the lines, the others decode batches of
/// them (``defaultDecoders``), and the caller takes the batches back in the order of the file.
///
/// Nothing changes but the threads: the body sees every decoded line in order, a line that
/// does not decode throws its error after every line before it has been through the body, and a
/// body that throws stops the reading.
enum DecodedLines {
    /// Decoding threads by default: one per core but the one the body (the importer's fold) keeps
    /// busy. With the fold reading records as a replay does, decoding a line and folding it take
    /// about as long (0.68 and 0.6 µs), and on two cores a second decoder only took turns with the
    /// fold: 1M `patch` lines 0.72–0.80 s with two, 0.64–0.70 s with one.
    static var defaultDecoders: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }

    /// Lines read per batch, and batches read ahead of the body at most.
    static let batchLines = 4_096
    static let batchesAhead = 6

    /// Calls `body` with `decode`'s value of each non-blank line of `path` (`-` for stdin) and the
    /// line's 1-based number; `progress` with the bytes read so far. `decode` sees the line's
    /// bytes only while it runs.
    ///
    /// - Parameter decoders: Threads decoding at once; by default ``defaultDecoders``.
    static func forEach<Value: Sendable>(
        path: String, decoders: Int = defaultDecoders, progress: (Int) -> Void = { _ in },
        decode: @escaping @Sendable (UnsafeRawBufferPointer, Int) throws(ToolError) -> Value,
        _ body: (Value, Int) throws(ToolError) -> Void
    ) throws(ToolError) {
        try forEachBatch(
            path: path, decoders: decoders, progress: progress, makeOutput: { [Value]() },
            decode: { (line, number, values: inout [Value]) throws(ToolError) in values.append(try decode(line, number)) }
        ) { (values, numbers) throws(ToolError) in
            for (value, number) in zip(values, numbers) { try body(value, number) }
        }
    }

    /// Calls `body` with each batch of lines of `path` (`-` for stdin) as `decode` wrote them into
    /// one output (made by `makeOutput`), and the numbers of the lines it took, in order;
    /// `progress` with the bytes read so far. What passes between the threads is one output per
    /// batch: `reel import` writes a batch's records into one buffer. `decode` adds a line to the
    /// output, or throws and leaves it as it was.
    ///
    /// - Parameter decoders: Threads decoding at once; by default ``defaultDecoders``.
    static func forEachBatch<Output: Sendable>(
        path: String, decoders: Int = defaultDecoders, progress: (Int) -> Void = { _ in },
        makeOutput: @escaping @Sendable () -> Output,
        decode: @escaping @Sendable (UnsafeRawBufferPointer, Int, inout Output) throws(ToolError) -> Void,
        _ body: (Output, [Int]) throws(ToolError) -> Void
    ) throws(ToolError) {
        let queue = BatchQueue<Output>(capacity: batchesAhead)
        let threads = DispatchGroup()
        threads.enter()
        Thread.startNamed("reel-read-lines") {
            defer { threads.leave() }
            var lines = Lines()
            do throws(ToolError) {
                try InputReader.forEachLine(path: path, progress: { lines.bytesRead = $0 }) { bytes, line, number throws(ToolError) in
                    lines.append(line, of: bytes, number: number)
                    if lines.lines.count == batchLines {
                        guard queue.put(lines) else { throw ToolError("stopped") }
                        lines = Lines(bytesRead: lines.bytesRead)
                    }
                }
            } catch {
                if !queue.isCancelled { lines.failure = error }
            }
            _ = queue.put(lines)
            queue.finish()
        }
        for number in 0..<max(1, decoders) {
            threads.enter()
            Thread.startNamed("reel-decode-\(number)") {
                defer { threads.leave() }
                while let (position, lines) = queue.takeLines() {
                    queue.decoded(decodeBatch(lines, makeOutput(), decode), at: position)
                }
            }
        }
        // Stopped early, the threads are not waited for: the reader may be blocked reading a pipe
        // that stays open. They stop at their next batch (or end with the process).
        defer { queue.cancel() }
        while let batch = queue.take() {
            try body(batch.output, batch.numbers)
            progress(batch.bytesRead)
            if let failure = batch.failure { throw failure }
        }
        threads.wait()
    }

    /// A batch's lines decoded; a line that does not decode ends the batch with its error (the
    /// lines before it kept).
    private static func decodeBatch<Output: Sendable>(
        _ lines: Lines, _ output: Output, _ decode: @Sendable (UnsafeRawBufferPointer, Int, inout Output) throws(ToolError) -> Void
    ) -> Batch<Output> {
        var batch = Batch(output: output, bytesRead: lines.bytesRead)
        batch.numbers.reserveCapacity(lines.lines.count)
        var next = 0
        // A chunk at a time, its bytes borrowed once for all its lines.
        for (index, chunk) in lines.chunks.enumerated() {
            let failure = chunk.withUnsafeBytes { bytes -> ToolError? in
                while next < lines.lines.count, lines.lines[next].chunk == index {
                    let line = lines.lines[next]
                    next += 1
                    do throws(ToolError) {
                        try decode(UnsafeRawBufferPointer(rebasing: bytes[line.range]), line.number, &batch.output)
                        batch.numbers.append(line.number)
                    } catch {
                        return error
                    }
                }
                return nil
            }
            if let failure {
                batch.failure = failure
                return batch
            }
        }
        batch.failure = lines.failure
        return batch
    }

    /// Lines as read, not decoded yet: the chunks they were read in, and where each line is.
    struct Lines: Sendable {
        var chunks: [[UInt8]] = []
        var lines: [(chunk: Int, range: Range<Int>, number: Int)] = []
        var bytesRead = 0
        /// Why the reading stopped after these lines, if it failed.
        var failure: ToolError?

        /// Adds the line at `range` of `bytes`, the chunk of the line before or a new one.
        mutating func append(_ range: Range<Int>, of bytes: [UInt8], number: Int) {
            let same = chunks.last.map { last in
                last.withUnsafeBufferPointer { $0.baseAddress } == bytes.withUnsafeBufferPointer { $0.baseAddress }
            }
            if same != true { chunks.append(bytes) }
            lines.append((chunks.count - 1, range, number))
        }
    }

    struct Batch<Output: Sendable>: Sendable {
        var output: Output
        /// The numbers of the lines decoded into `output`, in order.
        var numbers: [Int] = []
        var bytesRead = 0
        var failure: ToolError?
    }
}

/// Batches between the reading thread, the decoding threads and the caller: read batches are
/// numbered, decoded in any order, and taken in the order of their numbers. At most `capacity`
/// batches are read and not yet taken.
private final class BatchQueue<Output: Sendable>: @unchecked Sendable {
    // (Unchecked: every stored property is read and written under `condition` only.)
    private var read: [(position: Int, lines: DecodedLines.Lines)] = []
    private var decoded: [Int: DecodedLines.Batch<Output>] = [:]
    private var nextPosition = 0
    private var nextTaken = 0
    private var finished = false
    private var cancelled = false
    private let capacity: Int
    private let condition = NSCondition()

    init(capacity: Int) {
        self.capacity = capacity
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body()
    }

    var isCancelled: Bool { locked { cancelled } }

    /// Adds read lines, waiting for room; `false` once the caller stopped taking.
    func put(_ lines: DecodedLines.Lines) -> Bool {
        locked {
            while !cancelled, nextPosition - nextTaken >= capacity { condition.wait() }
            guard !cancelled else { return false }
            read.append((nextPosition, lines))
            nextPosition += 1
            return true
        }
    }

    /// No more lines will be read.
    func finish() {
        locked { finished = true }
    }

    /// The next read batch to decode, waiting for one; `nil` when the reading finished and every
    /// batch was handed out, or the caller stopped taking.
    func takeLines() -> (Int, DecodedLines.Lines)? {
        locked {
            while !cancelled, read.isEmpty, !finished { condition.wait() }
            guard !cancelled, !read.isEmpty else { return nil }
            return read.removeFirst()
        }
    }

    func decoded(_ batch: DecodedLines.Batch<Output>, at position: Int) {
        locked { decoded[position] = batch }
    }

    /// The next decoded batch in the order they were read, waiting for it; `nil` when the reading
    /// finished and all were taken.
    func take() -> DecodedLines.Batch<Output>? {
        locked {
            while true {
                if let batch = decoded.removeValue(forKey: nextTaken) {
                    nextTaken += 1
                    return batch
                }
                if finished, nextTaken == nextPosition { return nil }
                condition.wait()
            }
        }
    }

    /// The caller takes no more: the reader and the decoders stop.
    func cancel() {
        locked { cancelled = true }
    }
}
