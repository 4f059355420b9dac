/// The lists of a run of consecutive actions as the index stores them: one per kind and pointer,
/// named by its key prefix (``ChangeIndexKeys/prefix(_:_:)``), in key order, each with its seqs in
/// order.
///
/// What a part of a build hands over: each part works out its own lists on its own core, and the
/// parts' lists are joined (``joining(_:)``) by keeping them side by side and merging them in key
/// order as they are read (``forEachList(_:)``, by the append). Joining the parts' postings
/// re-interned every part's pointers and listed them all on one core, a quarter of building the
/// index; copying the parts' lists into one set of arrays was a twentieth, most of it the kernel
/// handing out fresh pages for the copy, on one core after the parts' folds.
///
/// A part's lists lie in three arrays, whatever their number (a part of a build has about
/// 100,000): the prefixes one after another, the seqs one after another, and where each list's
/// are (``Run``). With two arrays per list, allocating them, copying them and freeing them was a
/// fifth of the build's time after its folds.
public struct ChangeLists: Sendable {
    /// Where a list's prefix and seqs are in its run's ``Run/prefixBytes`` and ``Run/seqs``.
    struct Span {
        var prefixStart: Int
        var prefixEnd: Int
        var seqStart: Int
        var seqEnd: Int
    }

    /// The lists of one run of actions, in the order of their prefixes.
    struct Run: Sendable {
        var spans: [Span] = []
        var prefixBytes: [UInt8] = []
        var seqs: [UInt64] = []
    }

    /// The seqs covered (every action of the run, whether it changed anything or not).
    public private(set) var first: UInt64?
    public private(set) var last: UInt64?
    /// The runs joined, each following the one before: a pointer's seqs are its runs' seqs one
    /// after the other. One for the lists of one fold, none for an empty run.
    private var runs: [Run] = []

    public init(_ postings: ChangePostings) {
        first = postings.first
        last = postings.last
        guard first != nil else { return }
        let tree = postings.recorder.tree
        let flat = postings.flatLists()
        var run = Run()
        run.seqs = flat.seqs
        run.spans.reserveCapacity(flat.nodes.count)
        for (index, node) in flat.nodes.enumerated() {
            let prefixStart = run.prefixBytes.count
            ChangeIndexKeys.appendPrefix(node >= 0 ? .changed : .unfollowed, of: node >= 0 ? node : ~node, in: tree, to: &run.prefixBytes)
            run.spans.append(Span(prefixStart: prefixStart, prefixEnd: run.prefixBytes.count, seqStart: flat.starts[index], seqEnd: flat.starts[index + 1]))
        }
        run.spans = Self.sortedByPrefix(run.spans, in: run.prefixBytes)
        runs = [run]
    }

    /// `spans` in the order of their prefixes, compared as their first 24 bytes (three
    /// big-endian integers, zero past the end) and only where those are equal byte by byte: a
    /// part's hundred thousand lists sorted with `memcmp` at every comparison took a third of
    /// listing them.
    static func sortedByPrefix(_ spans: [Span], in prefixBytes: [UInt8]) -> [Span] {
        prefixBytes.withUnsafeBufferPointer { bytes in
            func head(_ span: Span, _ offset: Int) -> UInt64 {
                var value: UInt64 = 0
                for index in (span.prefixStart + offset)..<(span.prefixStart + offset + 8) {
                    value = value << 8 | UInt64(index < span.prefixEnd ? bytes[index] : 0)
                }
                return value
            }
            var keys = spans.indices.map { index in
                (head(spans[index], 0), head(spans[index], 8), head(spans[index], 16), index)
            }
            keys.sort { a, b in
                if a.0 != b.0 { return a.0 < b.0 }
                if a.1 != b.1 { return a.1 < b.1 }
                if a.2 != b.2 { return a.2 < b.2 }
                let x = spans[a.3]
                let y = spans[b.3]
                return ChangeIndexKeys.compare(bytes[x.prefixStart..<x.prefixEnd], bytes[y.prefixStart..<y.prefixEnd]) < 0
            }
            return keys.map { spans[$0.3] }
        }
    }

    private init(first: UInt64?, last: UInt64?, runs: [Run]) {
        self.first = first
        self.last = last
        self.runs = runs
    }

    /// Calls `body` with each list's prefix and seqs, in key order.
    ///
    /// The runs are merged as they are read, nothing copied: a list's seqs are read from each run
    /// that has it in turn (``ListSeqs``).
    func forEachList<E: Error>(_ body: (UnsafeBufferPointer<UInt8>, ListSeqs) throws(E) -> Void) throws(E) {
        try withRunBuffers { (runs) throws(E) in
            var heads = [Int](repeating: 0, count: runs.count)
            var holders: [Int] = []
            var segments: [UnsafeBufferPointer<UInt64>] = []
            while true {
                holders.removeAll(keepingCapacity: true)
                var least: UnsafeBufferPointer<UInt8>?
                for (index, run) in runs.enumerated() where heads[index] < run.spans.count {
                    let span = run.spans[heads[index]]
                    let prefix = UnsafeBufferPointer(rebasing: run.prefixes[span.prefixStart..<span.prefixEnd])
                    let order = least.map { ChangeIndexKeys.compare(prefix[...], $0[...]) } ?? -1
                    if order < 0 {
                        least = prefix
                        holders.removeAll(keepingCapacity: true)
                    }
                    if order <= 0 { holders.append(index) }
                }
                guard let least else { return }
                segments.removeAll(keepingCapacity: true)
                for index in holders {
                    let span = runs[index].spans[heads[index]]
                    segments.append(UnsafeBufferPointer(rebasing: runs[index].seqs[span.seqStart..<span.seqEnd]))
                    heads[index] += 1
                }
                try segments.withUnsafeBufferPointer { (segments) throws(E) in try body(least, ListSeqs(segments)) }
            }
        }
    }

    /// A run's arrays, lent.
    private struct RunBuffers {
        var spans: UnsafeBufferPointer<Span>
        var prefixes: UnsafeBufferPointer<UInt8>
        var seqs: UnsafeBufferPointer<UInt64>
    }

    /// Calls `body` with every run's arrays.
    private func withRunBuffers<E: Error>(_ body: ([RunBuffers]) throws(E) -> Void) throws(E) {
        var lent: [RunBuffers] = []
        lent.reserveCapacity(runs.count)
        try withRunBuffers(from: 0, lending: &lent, body)
    }

    private func withRunBuffers<E: Error>(from index: Int, lending lent: inout [RunBuffers], _ body: ([RunBuffers]) throws(E) -> Void) throws(E) {
        guard index < runs.count else { return try body(lent) }
        try runs[index].spans.withUnsafeBufferPointer { (spans) throws(E) in
            try runs[index].prefixBytes.withUnsafeBufferPointer { (prefixes) throws(E) in
                try runs[index].seqs.withUnsafeBufferPointer { (seqs) throws(E) in
                    lent.append(RunBuffers(spans: spans, prefixes: prefixes, seqs: seqs))
                    try withRunBuffers(from: index + 1, lending: &lent, body)
                }
            }
        }
    }

    /// Every list as arrays of its own, in key order (for tests and small runs).
    var lists: [(prefix: [UInt8], seqs: [UInt64])] {
        var lists: [(prefix: [UInt8], seqs: [UInt64])] = []
        forEachList { prefix, seqs in lists.append((Array(prefix), Array(seqs))) }
        return lists
    }

    /// The lists of `parts`, runs that each follow the one before (an empty run aside): a
    /// pointer's seqs are its parts' seqs one after the other. Nothing is copied: the parts are
    /// merged as they are read.
    public static func joining(_ parts: [ChangeLists]) -> ChangeLists {
        let parts = parts.filter { $0.first != nil }
        guard parts.count > 1 else { return parts.first ?? ChangeLists(first: nil, last: nil, runs: []) }
        for (earlier, later) in zip(parts, parts.dropFirst()) {
            precondition(earlier.last! + 1 == later.first!, "joined change lists must follow each other")
        }
        return ChangeLists(first: parts.first!.first, last: parts.last!.last, runs: parts.flatMap(\.runs))
    }
}

/// The seqs of one list of ``ChangeLists/forEachList(_:)``, read in order: those of each run
/// that has the list, one run after another. Valid only inside the call it is passed to.
struct ListSeqs: Sequence, IteratorProtocol {
    private let segments: UnsafeBufferPointer<UnsafeBufferPointer<UInt64>>
    private var segment = 0
    private var offset = 0

    init(_ segments: UnsafeBufferPointer<UnsafeBufferPointer<UInt64>>) {
        self.segments = segments
    }

    mutating func next() -> UInt64? {
        while segment < segments.count {
            if offset < segments[segment].count {
                defer { offset += 1 }
                return segments[segment][offset]
            }
            segment += 1
            offset = 0
        }
        return nil
    }

    /// Reads the next seqs into `buffer`, as many as fit; returns how many (0 at the end).
    mutating func read(into buffer: UnsafeMutableBufferPointer<UInt64>) -> Int {
        var count = 0
        while count < buffer.count, segment < segments.count {
            let source = segments[segment]
            let taken = Swift.min(buffer.count - count, source.count - offset)
            if taken > 0 { (buffer.baseAddress! + count).update(from: source.baseAddress! + offset, count: taken) }
            count += taken
            offset += taken
            if offset == source.count {
                segment += 1
                offset = 0
            }
        }
        return count
    }
}
