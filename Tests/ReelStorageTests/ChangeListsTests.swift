import ReelJSON
@testable import ReelStorage
import ReelTestSupport
import Testing

/// The lists a build's parts hand over, joined: the same lists as one run through every action,
/// wherever the parts are cut, pointers too long to be keys included.
@Suite struct ChangeListsTests {
    /// Records `count` random edits from `first` on: leaves under a few branches, some removed
    /// whole, some below a pointer too long for a key (listed as an unfollowed change of its
    /// longest ancestor that fits), some actions changing nothing.
    static func postings(from first: UInt64, count: Int, random: inout SeededGenerator) -> ChangePostings {
        let long = String(repeating: "x", count: 300)
        var postings = ChangePostings()
        for seq in first..<(first + UInt64(count)) {
            postings.startAction()
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                break  // changes nothing: covered, in no list
            case 1:
                postings.recorder.record(at: ["b\(Int.random(in: 0..<3, using: &random))"], from: ["x": 1, "y": 2], to: .none)
            case 2:
                postings.recorder.record(at: ["deep", long, long, "leaf"], from: 1, to: 2)
            case 3:
                postings.recorder.recordUnfollowed(at: ["arrays", "a\(Int.random(in: 0..<4, using: &random))"])
            default:
                let branch = "b\(Int.random(in: 0..<3, using: &random))"
                let leaf = "l\(Int.random(in: 0..<40, using: &random))"
                postings.recorder.record(at: [branch, leaf], from: .int(Int64(seq)), to: .int(Int64(seq) + 1))
            }
            postings.endAction(seq: seq)
        }
        return postings
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func joinedPartsListAsOneRun(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        let count = 400
        // Parts cut at random seqs (some of one action), each with a recorder of its own.
        var cuts = Set((0..<Int.random(in: 1...6, using: &random)).map { _ in Int.random(in: 1..<count, using: &random) })
        cuts.insert(0)
        let bounds = cuts.sorted() + [count]
        var partRandom = SeededGenerator(state: seed &* 31)
        var wholeRandom = partRandom
        let parts = zip(bounds, bounds.dropFirst()).map { start, end in
            ChangeLists(Self.postings(from: UInt64(start + 1), count: end - start, random: &partRandom))
        }
        let whole = ChangeLists(Self.postings(from: 1, count: count, random: &wholeRandom))
        let joined = ChangeLists.joining(parts)

        #expect(joined.first == 1 && joined.last == UInt64(count))
        #expect(joined.lists.map(\.prefix) == whole.lists.map(\.prefix), "seed \(seed): the same lists in key order")
        #expect(joined.lists.map(\.seqs) == whole.lists.map(\.seqs), "seed \(seed): the same seqs")
        // Key order, each list's seqs strictly rising; the long pointer listed at its ancestor.
        #expect(zip(joined.lists, joined.lists.dropFirst()).allSatisfy { ChangeIndexKeys.precedes($0.prefix, $1.prefix) })
        #expect(joined.lists.allSatisfy { list in zip(list.seqs, list.seqs.dropFirst()).allSatisfy { $0 < $1 } })
        #expect(joined.lists.allSatisfy { $0.prefix.count <= 3 + ChangeIndexKeys.maxPointerBytes })
        #expect(joined.lists.contains { $0.prefix == ChangeIndexKeys.prefix(.unfollowed, "/deep/" + String(repeating: "x", count: 300)) })
    }

    /// A chunk is the version, the count, the last seq and the deltas as varints, then the
    /// checksum seeded with its key (written here the plain way, with a `BinaryWriter`), and the
    /// reader decodes it: chunks of 1 to 128 seqs, gaps of every varint length.
    /// The journal joins the writer's groups' postings (``ChangePostings/append(_:)``, each group
    /// with a pointer tree of its own, many of one action): the same lists as one run.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func appendedGroupsListAsOneRun(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        let count = 300
        var bounds = [0]
        while bounds.last! < count { bounds.append(min(count, bounds.last! + Int.random(in: 1...(seed == 1 ? 1 : 25), using: &random))) }
        var groupRandom = SeededGenerator(state: seed &* 17)
        var wholeRandom = groupRandom
        var joined = ChangePostings()
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            joined.append(Self.postings(from: UInt64(start + 1), count: end - start, random: &groupRandom))
        }
        let whole = ChangeLists(Self.postings(from: 1, count: count, random: &wholeRandom))
        let lists = ChangeLists(joined)
        #expect(joined.first == 1 && joined.last == UInt64(count))
        #expect(lists.lists.map(\.prefix) == whole.lists.map(\.prefix), "seed \(seed): the same lists in key order")
        #expect(lists.lists.map(\.seqs) == whole.lists.map(\.seqs), "seed \(seed): the same seqs")
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func chunksEncodedInPlaceAreTheChunksEncoded(seed: UInt64) throws {
        var random = SeededGenerator(state: seed)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ChangeIndexKeys.maxChunkBytes, alignment: 8)
        defer { buffer.deallocate() }
        for count in [1, 2, 127, 128] + (0..<20).map({ _ in Int.random(in: 1...128, using: &random) }) {
            var seqs = [UInt64.random(in: 1...(1 << 40), using: &random)]
            for _ in 1..<count {
                let gap = UInt64.random(in: 1...(1 << UInt64.random(in: 1...56, using: &random)), using: &random)
                seqs.append(seqs.last! + gap)
            }
            let key = ChangeIndexKeys.key(ChangeIndexKeys.prefix(.changed, "/a/\(count)"), seqs[0])
            var writer = BinaryWriter()
            writer.writeUInt8(ChangeIndexKeys.chunkVersion)
            writer.writeVarint(UInt64(seqs.count))
            writer.writeVarint(seqs.last!)
            for (earlier, later) in zip(seqs, seqs.dropFirst()) { writer.writeVarint(later - earlier) }
            RecordChecksum.seal(&writer.bytes, seed: RecordChecksum.seed(ofKey: key))
            let expected = writer.bytes
            let written = seqs.withUnsafeBufferPointer { seqs in
                key.withUnsafeBytes { key in
                    Array(buffer[..<ChangeIndexKeys.encodeChunk(seqs[...], key: key, into: buffer)])
                }
            }
            #expect(written == expected, "\(count) seqs")
            #expect(ChangeIndexKeys.encode(ChangeIndexKeys.Chunk(first: seqs[0], seqs: seqs), key: key) == expected)
            #expect(try written.withUnsafeBytes { try ChangeIndexKeys.decode($0, key: key, first: seqs[0]) } == seqs)
        }
    }

    @Test func joiningNothingOrEmptyRunsCoversNothing() {
        let empty = ChangeLists(ChangePostings())
        #expect(ChangeLists.joining([]).first == nil)
        let joined = ChangeLists.joining([empty, empty])
        #expect(joined.first == nil && joined.last == nil && joined.lists.isEmpty)
        var random = SeededGenerator(state: 9)
        let one = ChangeLists(Self.postings(from: 5, count: 10, random: &random))
        let alone = ChangeLists.joining([one, empty])
        #expect(alone.first == 5 && alone.last == 14 && alone.lists.map(\.seqs) == one.lists.map(\.seqs))
    }

    /// Prefixes sorted by their first 24 bytes as integers, then byte by byte, are in the order of
    /// their bytes: of every length around 8, 16 and 24, zero bytes inside, one a prefix of another.
    @Test func spansSortedByPrefixAreInTheOrderOfTheirBytes() {
        var random = SeededGenerator(state: 17)
        let alphabet: [UInt8] = [0, 1, 0x2F, 0x61, 0x62, 0xFF]
        var prefixes: [[UInt8]] = []
        for _ in 0..<3_000 {
            let length = Int.random(in: 0...30, using: &random)
            prefixes.append((0..<length).map { _ in alphabet.randomElement(using: &random)! })
        }
        // Some equal, and some extended by a zero or another byte.
        for index in 0..<300 {
            prefixes.append(prefixes[index])
            prefixes.append(prefixes[index] + [0])
            prefixes.append(prefixes[index] + [0x61, 0])
        }
        var bytes: [UInt8] = []
        var spans: [ChangeLists.Span] = []
        for prefix in prefixes.shuffled(using: &random) {
            spans.append(ChangeLists.Span(prefixStart: bytes.count, prefixEnd: bytes.count + prefix.count, seqStart: 0, seqEnd: 0))
            bytes += prefix
        }
        let sorted = ChangeLists.sortedByPrefix(spans, in: bytes).map { Array(bytes[$0.prefixStart..<$0.prefixEnd]) }
        #expect(sorted == prefixes.sorted { $0.lexicographicallyPrecedes($1) })
    }
}
