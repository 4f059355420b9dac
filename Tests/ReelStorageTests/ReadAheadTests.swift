import Foundation
import ReelCore
@testable import ReelStorage
import ReelTestSupport
import Testing

/// Reading the log ahead on other threads, one segment at a time: the same envelopes in the same
/// order as the plain walk, whoever decodes which segment.
@Suite(.heavy) struct ReadAheadTests {
    /// A log of `count` numbered actions, committed in batches.
    func logged(_ count: UInt64, in path: String) throws -> DataDirectory {
        let data = try DataDirectory(path: path, reducerName: "test")
        var next: UInt64 = 1
        while next <= count {
            let stop = min(count, next + 4_999)
            try data.commit(CommitBatch(envelopes: (next...stop).map { numberedEnvelope($0) }))
            next = stop + 1
        }
        return data
    }

    @Test func everyActionOnceAndInOrderWhateverTheRange() throws {
        let dir = try TemporaryDirectory()
        let count = 3 * DataDirectory.segmentLength * 4 + 123
        let data = try logged(count, in: dir.path)
        // Ranges long enough to read ahead: from the start, starting and ending mid-segment, and
        // running past the end of the log (the walk ends where the log does).
        let ranges: [(UInt64, UInt64)] = [(0, count), (1, count), (700, count - 5), (3, count + 10_000), (5_000, .max)]
        for (first, last) in ranges {
            var seen: [ActionEnvelope] = []
            try data.forEachEnvelopeReadingAhead(from: first, through: last) { seen.append($0); return true }
            let expected: [UInt64] = Array(max(first, 1)...min(last, count))
            #expect(seen.map(\.seq) == expected, "from \(first) through \(last)")
            #expect(seen.first == numberedEnvelope(expected[0]) && seen.last == numberedEnvelope(expected.last!))
        }
    }

    @Test func stoppingEarlyReleasesTheReaders() throws {
        let dir = try TemporaryDirectory()
        var data: DataDirectory? = try logged(20_000, in: dir.path)
        var seen = 0
        try data!.forEachEnvelopeReadingAhead(from: 1, through: 20_000) { _ in seen += 1; return seen < 2_500 }
        #expect(seen == 2_500)
        // The readers hold read transactions and the directory while they run: they must be gone,
        // or the directory could not be opened again in this process.
        weak let released = data
        data = nil
        #expect(released == nil)
        #expect(try DataDirectory(path: dir.path, reducerName: "test").latestSeq() == 20_000)
    }

    @Test func anErrorFromTheBodyEndsTheWalk() throws {
        struct Stop: Error {}
        let dir = try TemporaryDirectory()
        let data = try logged(12_000, in: dir.path)
        var seen: UInt64 = 0
        #expect(throws: Stop.self) {
            try data.forEachEnvelopeReadingAhead(from: 1, through: 12_000) { envelope in
                seen = envelope.seq
                if envelope.seq == 9_000 { throw Stop() }
                return true
            }
        }
        #expect(seen == 9_000)
    }

    /// A damaged record fails the walk, after every action before its segment was delivered in
    /// order, and nothing at or after it is delivered.
    @Test func aDamagedActionFailsTheWalkAndNothingPastItIsDelivered() throws {
        let dir = try TemporaryDirectory()
        _ = try logged(15_000, in: dir.path)
        try damageStoredRecord(in: dir.path, database: "log", key: seqKey(8_500), bit: 40)
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        var seen: [UInt64] = []
        do {
            try data.forEachEnvelopeReadingAhead(from: 1, through: 15_000) { seen.append($0.seq); return true }
            Issue.record("walked past a damaged action")
        } catch let error as StorageError {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("action 8500 is damaged"))
        }
        #expect(seen == Array(1...UInt64(seen.count)))
        #expect(seen.count < 8_500 && seen.count >= 8_500 - Int(DataDirectory.segmentLength))
    }

    /// A walk started while another runs (here, from inside its body) reads ahead only with cores
    /// no walk uses, often none: every action still once and in order, and the outer walk too.
    @Test func aWalkBesideAnotherSeesEveryActionInOrder() throws {
        let dir = try TemporaryDirectory()
        let count: UInt64 = 3 * DataDirectory.segmentLength * 4 + 7
        let data = try logged(count, in: dir.path)
        var outer: [UInt64] = []
        var inner: [UInt64] = []
        try data.forEachEnvelopeReadingAhead(from: 1, through: count) { envelope in
            outer.append(envelope.seq)
            if envelope.seq == 2 {
                try data.forEachEnvelopeReadingAhead(from: 10, through: count) { inner.append($0.seq); return true }
            }
            return true
        }
        #expect(outer == Array(1...count))
        #expect(inner == Array(10...count))
    }

    /// The budget of readers: a walk alone gets its readers, a walk beside others only the cores
    /// that no walk or reader uses, and ending walks gives their cores back.
    @Test func readersTakeOnlyTheCoresNoWalkUses() {
        let budget = WalkBudget(cores: 4, readersAlone: 3)
        let first = budget.start()
        #expect(first == 3)  // alone: one reader per other core
        #expect(budget.start() == 0)  // every core taken by the first walk and its readers
        budget.end(readers: 0)
        budget.end(readers: first)
        let alone = budget.start()
        #expect(alone == 3)
        budget.end(readers: alone)

        let twoCores = WalkBudget(cores: 2, readersAlone: 1)
        let a = twoCores.start()
        let b = twoCores.start()
        #expect((a, b) == (1, 0))
        twoCores.end(readers: a)  // the first walk ends: one core free
        let c = twoCores.start()
        #expect(c == 0)  // the second walk and the new one fill both cores
        twoCores.end(readers: b)
        twoCores.end(readers: c)
        let d = twoCores.start(), e = twoCores.start()
        #expect((d, e) == (1, 0))
        twoCores.end(readers: e)
        let f = twoCores.start()
        #expect(f == 0)  // the first walk and its reader still hold both cores
        twoCores.end(readers: d)
        twoCores.end(readers: f)
        #expect(twoCores.start() == 1)
    }

    /// Walks started inside ``WalkBudget/occupying(_:_:)`` find its cores taken: the first of a
    /// caller's parallel walks takes no reader on a core the next one is about to use; outside,
    /// the cores are free again.
    @Test func occupiedCoresTakeNoReaders() {
        let budget = WalkBudget(cores: 2, readersAlone: 1)
        let inside = budget.occupying(2) { () -> [Int] in
            let first = budget.start()
            let second = budget.start()
            budget.end(readers: first)
            budget.end(readers: second)
            return [first, second]
        }
        #expect(inside == [0, 0])
        let partly = budget.occupying(1) { () -> Int in
            let walk = budget.start()
            budget.end(readers: walk)
            return walk
        }
        #expect(partly == 0)  // one core occupied, the walk on the other: none idle
        let alone = budget.start()
        #expect(alone == 1)
        budget.end(readers: alone)
    }
}
