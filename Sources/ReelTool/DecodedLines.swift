import Dispatch
import Foundation
import Synchronization

/// The lines of a file decoded on a thread of their own, ahead of the caller, who takes them in
/// order: `reel import` parses each line's JSON into an action while it folds and writes the
/// ones before (the two take about as long: alone, one thread spent 7.8 µs an action on both).
///
/// Nothing changes but the threads: the body sees every decoded line in order, a line that
/// does not decode throws its error after every line before it has been through the body, and a
/// body that throws stops the reading.
enum DecodedLines {
    /// Lines decoded per batch handed over, and batches decoded ahead of the body at most.
    static let batchLines = 4_096
    static let batchesAhead = 4

    /// Calls `body` with `decode`'s value of each non-blank line of `path` (`-` for stdin) and the
    /// line's 1-based number; `progress` with the bytes read so far.
    static func forEach<Value: Sendable>(
        path: String, progress: (Int) -> Void = { _ in },
        decode: @escaping @Sendable (ArraySlice<UInt8>, Int) throws(ToolError) -> Value,
        _ body: (Value, Int) throws(ToolError) -> Void
    ) throws(ToolError) {
        let queue = BatchQueue<Value>(capacity: batchesAhead)
        let reading = DispatchGroup()
        reading.enter()
        let reader = Thread {
            defer { reading.leave() }
            var batch = Batch<Value>()
            do throws(ToolError) {
                try InputReader.forEachLine(path: path, progress: { batch.bytesRead = $0 }) { line, number throws(ToolError) in
                    // A line that does not decode ends the batch and the reading: the lines
                    // before it still go through the body first.
                    do throws(ToolError) {
                        batch.values.append((try decode(line, number), number))
                    } catch {
                        batch.failure = error
                        throw error
                    }
                    if batch.values.count == batchLines {
                        guard queue.put(batch) else { throw ToolError("stopped") }
                        batch = Batch(bytesRead: batch.bytesRead)
                    }
                }
            } catch {
                if batch.failure == nil, !queue.isCancelled { batch.failure = error }
            }
            _ = queue.put(batch)
            queue.finish()
        }
        reader.name = "reel-read-lines"
        reader.start()
        // Stopped early, the reader is not waited for: it may be blocked reading a pipe that stays
        // open. It stops at its next batch (or ends with the process).
        defer { queue.cancel() }
        while let batch = queue.take() {
            for (value, number) in batch.values { try body(value, number) }
            progress(batch.bytesRead)
            if let failure = batch.failure { throw failure }
        }
        reading.wait()
    }

    struct Batch<Value: Sendable>: Sendable {
        var values: [(Value, Int)] = []
        var bytesRead = 0
        var failure: ToolError?
    }
}

/// A bounded queue of batches between one reading thread and the caller.
private final class BatchQueue<Value: Sendable>: Sendable {
    private struct State {
        var batches: [DecodedLines.Batch<Value>] = []
        var finished = false
        var cancelled = false
    }

    private let state = Mutex(State())
    /// Signalled when a batch is put or the reading finishes; waited on by `take`.
    private let items = DispatchSemaphore(value: 0)
    /// Signalled when a batch is taken or the queue is cancelled; waited on by `put`.
    private let room: DispatchSemaphore

    init(capacity: Int) {
        room = DispatchSemaphore(value: capacity)
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Adds a batch, waiting for room; `false` once the caller stopped taking.
    func put(_ batch: DecodedLines.Batch<Value>) -> Bool {
        room.wait()
        let added = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.batches.append(batch)
            return true
        }
        if added { items.signal() } else { room.signal() }  // passes a cancellation's wake-up on
        return added
    }

    /// No more batches will come.
    func finish() {
        state.withLock { $0.finished = true }
        items.signal()
    }

    /// The next batch, waiting for it; `nil` when the reading finished and all were taken.
    func take() -> DecodedLines.Batch<Value>? {
        while true {
            items.wait()
            let next = state.withLock { state -> (batch: DecodedLines.Batch<Value>?, done: Bool) in
                if !state.batches.isEmpty { return (state.batches.removeFirst(), false) }
                return (nil, state.finished)
            }
            if let batch = next.batch {
                room.signal()
                return batch
            }
            if next.done {
                items.signal()  // a later call also returns nil
                return nil
            }
        }
    }

    /// The caller takes no more: a reader waiting for room stops.
    func cancel() {
        state.withLock { $0.cancelled = true }
        room.signal()
    }
}
