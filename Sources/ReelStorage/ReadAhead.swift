import Foundation
import ReelCore
import Synchronization

/// Hands decoded actions from reading threads to the caller, in order, one segment of the log at
/// a time, so that reading and decoding the log (more than half of a
/// replay's work) runs beside the caller's folding.
///
/// The range is cut into segments of ``DataDirectory/segmentLength`` seqs. A worker (a reading
/// thread, or the caller itself while the segment it needs next is still being decoded) claims the
/// next segment nobody has claimed, reads and decodes it on its own read transaction and puts it
/// here; the caller folds segments in seq order. The caller helping, rather than more threads,
/// is what keeps every core busy: with one reading thread per spare core, no thread ever waits for
/// a core while another waits for a segment.
///
/// Bounded: nobody claims a segment more than `capacity` segments ahead of the one the caller
/// folds next, so a long replay never holds more than a few thousand decoded actions in memory.
///
/// Segments the caller is done with travel back to the worker that decoded them, to be freed
/// there: memory freed on another thread than the one that allocated it goes back to the
/// allocating thread's malloc arena under that arena's lock, which a reader holds all the time it
/// decodes. Freeing on the reader made read-ahead replay about a third faster.
final class EnvelopeSegments: @unchecked Sendable {
    /// A decoded segment and the worker that decoded it.
    struct Segment {
        var worker: Int
        var envelopes: [ActionEnvelope]
        /// The prepared action of each envelope (`nil` for one not prepared), or empty when none is.
        var prepared: [PreparedStockAction?]
    }

    /// What the caller does next.
    enum Step {
        /// Fold this segment, the next in order.
        case fold(Segment)
        /// Decode segment `index` and ``deliver(_:_:isLast:)`` it: the next one is not ready yet.
        case decode(Int)
        /// The walk is over.
        case end
    }

    // @unchecked: every field is guarded by `condition`'s lock.
    private let condition = NSCondition()
    /// Decoded segments not folded yet, by index.
    private var ready: [Int: Segment] = [:]
    /// Folded segments waiting to be freed, per worker.
    private var spent: [[Segment]]
    private var nextToClaim = 0
    private var nextToFold = 0
    /// The first segment that is not delivered: the one after the range, or after a short segment
    /// (the end of the log), or the one a worker failed on.
    private var end: Int
    private var failure: (any Error)?
    private var cancelled = false
    private let capacity: Int

    /// - Parameters:
    ///   - count: how many segments the range has.
    ///   - workers: how many workers deliver segments (reading threads and the caller).
    init(count: Int, workers: Int, capacity: Int) {
        self.end = count
        self.spent = Array(repeating: [], count: workers)
        self.capacity = capacity
    }

    /// Whether a segment can be claimed now. Under the lock.
    private var claimable: Bool {
        !cancelled && nextToClaim < end && nextToClaim - nextToFold < capacity
    }

    /// Called by reading thread `worker`: the next segment to read, once one is within `capacity`
    /// of the caller; `nil` when there is nothing more to read. Swaps into `finishedWith` the
    /// segments this worker decoded that have been folded, for it to free outside the lock.
    func claim(worker: Int, freeing finishedWith: inout [Segment]) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        while !cancelled && nextToClaim < end && nextToClaim - nextToFold >= capacity {
            condition.wait()
        }
        swap(&finishedWith, &spent[worker])
        guard claimable else { return nil }
        defer { nextToClaim += 1 }
        return nextToClaim
    }

    /// Called by whoever decoded segment `index`; `isLast` when the walk ends with it (a short
    /// segment: the end of the log).
    func deliver(_ index: Int, _ segment: Segment, isLast: Bool) {
        condition.lock()
        defer { condition.unlock() }
        if isLast { end = min(end, index + 1) }
        guard !cancelled, index < end else { return }
        ready[index] = segment
        condition.broadcast()
    }

    /// Called by a worker that could not read segment `index`: the walk ends there with `error`.
    func fail(_ index: Int, _ error: any Error) {
        condition.lock()
        defer { condition.unlock() }
        if index < end {
            end = index
            failure = error
        }
        condition.broadcast()
    }

    /// Called by the caller, worker `worker`: the next segment to fold, or one to decode while the
    /// next is not ready, or the end.
    /// - Parameter done: the segment just folded, handed back to be freed by the worker that made it.
    /// - Throws: a worker's error, once the segments before it are folded.
    func next(worker: Int, returning done: consuming Segment?) throws -> Step {
        var handBack: Segment?
        if let segment = done.take(), segment.worker != worker {
            handBack = segment
        }  // (a segment the caller decoded itself is freed here, before the lock)
        condition.lock()
        defer { condition.unlock() }
        if let handBack { spent[handBack.worker].append(handBack) }
        while true {
            if let segment = ready.removeValue(forKey: nextToFold) {
                nextToFold += 1
                condition.broadcast()
                return .fold(segment)
            }
            guard nextToFold < end else {
                if let failure { throw failure }
                return .end
            }
            if claimable {
                defer { nextToClaim += 1 }
                return .decode(nextToClaim)
            }
            condition.wait()
        }
    }

    /// Called by the caller when it is done, early or not: releases the reading threads.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        ready.removeAll()
        condition.broadcast()
    }
}

extension DataDirectory {
    /// Below this many actions a reading thread costs more than it saves.
    static let readAheadThreshold: UInt64 = 4_096
    /// Seqs per segment: each is one read transaction and one hand-over.
    static let segmentLength: UInt64 = 1_024

    /// How many threads a walk alone in the process reads ahead with: one per core besides the
    /// caller's, at most three.
    static let readAheadThreads = min(3, max(1, ProcessInfo.processInfo.activeProcessorCount - 1))

    /// The threads of this process walking the log and reading ahead for its walks.
    static let walks = WalkBudget(cores: ProcessInfo.processInfo.activeProcessorCount, readersAlone: readAheadThreads)

    /// Like ``forEachEnvelope(from:through:_:)``, but for long ranges the log is read and decoded on
    /// other threads too while `body` runs on this one. Same order; each segment is read on its own
    /// read transaction, and the log only grows, so the walk ends, as the plain walk does, at the
    /// first seq it does not find (or at `last`). Readers take only cores no other walk of this
    /// process is using (``WalkBudget``): beside walks that keep every core busy, this is the
    /// plain walk.
    public func forEachEnvelopeReadingAhead(
        from first: UInt64, through last: UInt64, _ body: (ActionEnvelope) throws -> Bool
    ) throws {
        try forEachLoggedActionReadingAhead(from: first, through: last, preparing: false) { envelope, _ in try body(envelope) }
    }

    /// ``forEachEnvelopeReadingAhead(from:through:_:)`` of ``forEachLoggedAction(from:through:preparing:_:)``.
    public func forEachLoggedActionReadingAhead(
        from first: UInt64, through last: UInt64, preparing: Bool, _ body: (ActionEnvelope, PreparedStockAction?) throws -> Bool
    ) throws {
        let first = max(first, metadata.origin + 1)  // seqs start after the origin: a segment from before would look short
        guard first <= last else { return }
        guard last - first >= Self.readAheadThreshold else {
            try forEachLoggedAction(from: first, through: last, preparing: preparing) { envelope, prepared in try body(envelope, prepared) }
            return
        }
        let threads = Self.walks.start()
        defer { Self.walks.end(readers: threads) }  // (after the readers are joined: defers run in reverse)
        guard threads > 0 else {
            try forEachLoggedAction(from: first, through: last, preparing: preparing) { envelope, prepared in try body(envelope, prepared) }
            return
        }
        let caller = threads  // the caller's worker number
        let count = Int((last - first) / Self.segmentLength) + 1
        let segments = EnvelopeSegments(count: count, workers: threads + 1, capacity: 2 * threads + 4)
        let threadsDone = DispatchGroup()
        for worker in 0..<threads {
            threadsDone.enter()
            // Weak: the thread must not keep the directory (and its LMDB environment) alive past the
            // group's signal, which is what the caller waits for.
            Thread.startNamed("reel-read-ahead") { [weak self] in
                defer { threadsDone.leave() }
                var finishedWith: [EnvelopeSegments.Segment] = []
                while let index = segments.claim(worker: worker, freeing: &finishedWith) {
                    finishedWith.removeAll()  // frees here, on the thread that allocated them
                    guard let self else { break }
                    self.decodeSegment(index, first: first, last: last, worker: worker, into: segments, preparing: preparing)
                }
            }
        }
        defer {
            // Released and joined before returning: the readers hold read transactions and this
            // directory, which must be free once the caller is done (to close or reopen it).
            segments.cancel()
            threadsDone.wait()
        }
        var previous: EnvelopeSegments.Segment?
        while true {
            switch try segments.next(worker: caller, returning: previous.take()) {
            case .fold(let segment):
                // By index: each envelope is lent to `body` from the segment, not copied out of
                // it (a copy retains the payload and the strings, on a thread that did not make them).
                let envelopes = segment.envelopes
                if segment.prepared.isEmpty {
                    for index in envelopes.indices where try !body(envelopes[index], nil) { return }
                } else {
                    let prepared = segment.prepared
                    for index in envelopes.indices where try !body(envelopes[index], prepared[index]) { return }
                }
                previous = segment
            case .decode(let index):
                decodeSegment(index, first: first, last: last, worker: caller, into: segments, preparing: preparing)
            case .end:
                return
            }
        }
    }

    /// Runs `body`, whose walks of the log keep `cores` cores busy, with those cores counted as
    /// busy: a walk it starts reads ahead only on a core beyond them (``WalkBudget``).
    ///
    /// The change index's build folds its parts two per core: the first part started alone and
    /// took the other core for a reader until its end, on which the second part had to share
    /// it; the parts then ended apart, and one core idled for a fifth of the build.
    public static func withWalksOccupying<R, E: Error>(_ cores: Int, _ body: () throws(E) -> R) throws(E) -> R {
        try walks.occupying(cores, body)
    }

    /// Reads and decodes segment `index` of `first...last` and hands it to `segments`.
    private func decodeSegment(_ index: Int, first: UInt64, last: UInt64, worker: Int, into segments: EnvelopeSegments, preparing: Bool) {
        let start = first + UInt64(index) * Self.segmentLength
        let stop = min(last, start + Self.segmentLength - 1)
        var envelopes: [ActionEnvelope] = []
        var prepared: [PreparedStockAction?] = []
        envelopes.reserveCapacity(Int(stop - start + 1))
        do {
            try forEachLoggedAction(from: start, through: stop, preparing: preparing) { (envelope: consuming ActionEnvelope, action: consuming PreparedStockAction?) in
                // Moved in, not copied (a copy and the release of the original was most of a
                // segment's decoding of actions that are not prepared).
                envelopes.append(consume envelope)
                // Kept only once a segment has a prepared action: a segment of other actions
                // (`merge`s, a typed app's) carries none.
                if let action {
                    if prepared.isEmpty {
                        prepared.reserveCapacity(Int(stop - start + 1))
                        prepared.append(contentsOf: repeatElement(nil, count: envelopes.count - 1))
                    }
                    prepared.append(action)
                } else if !prepared.isEmpty {
                    prepared.append(nil)
                }
                return true
            }
        } catch {
            segments.fail(index, error)
            return
        }
        let segment = EnvelopeSegments.Segment(worker: worker, envelopes: envelopes, prepared: prepared)
        segments.deliver(index, segment, isLast: envelopes.count < Int(stop - start + 1))
    }
}

/// How many threads a walk of the log may read ahead with, given the walks already running.
///
/// Walks that run side by side (`reel verify`'s checkpoint intervals, the change index's parts,
/// shadow's intervals, the daemon's query pool) already keep the cores busy: readers of their own
/// would only share those cores with them and add a hand-over per segment (verifying 1,000,000
/// actions on two cores took 0.58–0.62 s with a reader beside each interval, 0.54–0.58 s
/// without: BENCHMARKS.md, "Verify"). So a walk
/// alone reads ahead with ``readersAlone`` threads, and a walk beside others only with the cores
/// that no walk or reader uses, often none.
final class WalkBudget: Sendable {
    private let cores: Int
    private let readersAlone: Int
    /// Walks and readers running.
    private let busy = Mutex(0)

    init(cores: Int, readersAlone: Int) {
        self.cores = cores
        self.readersAlone = readersAlone
    }

    /// Counts a walk that starts and returns how many readers it may start (counted too). What it
    /// returns goes back through ``end(readers:)`` once the walk and its readers are done.
    func start() -> Int {
        busy.withLock { busy in
            let alone = busy == 0
            busy += 1
            let readers = alone ? readersAlone : min(readersAlone, max(0, cores - busy))
            busy += readers
            return readers
        }
    }

    /// Uncounts a walk and its readers.
    func end(readers: Int) {
        busy.withLock { $0 -= readers + 1 }
    }

    /// Counts `cores` as busy while `body` runs: for a caller that keeps them busy with walks of
    /// its own, started one after another, so that none of them reads ahead on a core that is
    /// idle only until the next one starts.
    func occupying<R, E: Error>(_ cores: Int, _ body: () throws(E) -> R) throws(E) -> R {
        busy.withLock { $0 += cores }
        defer { busy.withLock { $0 -= cores } }
        return try body()
    }
}
