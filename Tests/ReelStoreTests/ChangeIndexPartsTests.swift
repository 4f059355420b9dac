import ReelCore
import ReelJSON
@testable import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// The parts a build of the change index folds on its cores: split while they run, they cover
/// the range once, in order, each ending exactly where it was told, and the lists they make are
/// those of one fold through the whole range.
@Suite struct ChangeIndexPartsTests {
    /// A log of `count` random stock actions written in `directory` without the index, a timeline
    /// on it, and the state after each seq.
    static func log(
        in directory: borrowing TemporaryDirectory, count: Int, seed: UInt64, checkpointEvery: UInt64 = 16
    ) async throws -> (Timeline<JSONValue>, [JSONValue]) {
        var options = StoreOptions(checkpointEvery: checkpointEvery, storage: .init(durable: false))
        options.changeIndex = false
        let store = try Store(path: directory.sub("data"), definition: .stock, options: options)
        let states = try await ChangeIndexTests.fill(store, count: count, seed: seed)
        await store.close()
        return (Timeline(directory: store.directory, definition: .stock), states)
    }

    @Test func anIdleCoreTakesTheBackHalfOfThePartWithTheMostLeft() throws {
        let parts = ChangeIndexParts(first: 1, last: 100, count: 2, checkEvery: 4, minimumSplit: 10)
        let first = try #require(parts.take())
        let second = try #require(parts.take())
        #expect((first.start, first.end, second.start, second.end) == (1, 50, 51, 100))
        // The first part folds to its end; the second has reported seq 52 meanwhile.
        for seq in stride(from: 4 as UInt64, through: 48, by: 4) { #expect(parts.reached(seq, part: first.index, progress: nil) == 50) }
        #expect(parts.reached(52, part: second.index, progress: nil) == 100)
        // 48 left: the back half is split off at the first report at or past the middle (76).
        let third = try #require(parts.take())
        #expect((third.start, third.end) == (77, 100))
        #expect(parts.reached(72, part: second.index, progress: nil) == 76)
        #expect(parts.reached(76, part: second.index, progress: nil) == 76, "the second part ends where the third starts")
        #expect(parts.partsInOrder.map { [$0.start, $0.end] } == [[1, 50], [51, 76], [77, 100]])
    }

    /// A part starts right after a checkpoint (its first state is the checkpoint's, nothing
    /// replayed): the first parts after the checkpoint before where equal parts would start, a
    /// split at the checkpoint nearest the middle of what is left, even between two reports.
    @Test func partsStartRightAfterCheckpoints() throws {
        let parts = ChangeIndexParts(first: 1, last: 100, count: 2, checkEvery: 8, minimumSplit: 10, checkpoints: [30, 45, 61, 83, 90])
        let first = try #require(parts.take())
        let second = try #require(parts.take())
        #expect((first.start, first.end, second.start, second.end) == (1, 45, 46, 100), "equal parts would start at 51")
        #expect(parts.reached(48, part: second.index, progress: nil) == 100)
        // 52 left after 48: the middle is 74, the checkpoints around it 61 and 83; 83 is nearer.
        let third = try #require(parts.take())
        #expect((third.start, third.end) == (84, 100))
        #expect(parts.reached(56, part: second.index, progress: nil) == 83)
        #expect(parts.reached(80, part: second.index, progress: nil) == 83, "told at 80 to fold on to 83, not a multiple of 8")
        #expect(parts.partsInOrder.map { [$0.start, $0.end] } == [[1, 45], [46, 83], [84, 100]])

        // No checkpoint near the middle: the first report at or past it.
        let far = ChangeIndexParts(first: 1, last: 100, count: 1, checkEvery: 4, minimumSplit: 10, checkpoints: [5, 99])
        let only = try #require(far.take())
        #expect(far.reached(4, part: only.index, progress: nil) == 100)
        let back = try #require(far.take())
        #expect((back.start, back.end) == (53, 100), "the middle of 5…100 is 52")
        // Checkpoints the part may already have folded (before its next report) are passed over.
        let early = ChangeIndexParts(first: 1, last: 40, count: 1, checkEvery: 16, minimumSplit: 10, checkpoints: [20, 30])
        let whole = try #require(early.take())
        #expect(early.reached(16, part: whole.index, progress: nil) == 40)
        let rest = try #require(early.take())
        #expect((rest.start, rest.end) == (33, 40), "the middle is 28; the part may have folded 20 and 30 (its next report is 32)")
    }

    @Test func aPartWithLittleLeftIsNotSplit() throws {
        let parts = ChangeIndexParts(first: 11, last: 40, count: 1, checkEvery: 2, minimumSplit: 12)
        let only = try #require(parts.take())
        #expect((only.start, only.end) == (11, 40))
        #expect(parts.reached(30, part: only.index, progress: nil) == 40)
        #expect(parts.take() == nil, "10 left, fewer than 12")
        #expect(parts.partsInOrder.map { [$0.start, $0.end] } == [[11, 40]])
    }

    @Test func progressCountsEveryPartsActionsAndStopEndsThemAll() throws {
        let parts = ChangeIndexParts(first: 1, last: 64, count: 2, checkEvery: 8, minimumSplit: 4)
        let first = try #require(parts.take())
        let second = try #require(parts.take())
        var reports: [UInt64] = []
        _ = parts.reached(8, part: first.index) { reports.append($0) }
        _ = parts.reached(40, part: second.index) { reports.append($0) }
        #expect(reports == [8, 16], "8 actions of the first part, then 8 of each")
        parts.stop()
        #expect(parts.take() == nil)
        #expect(parts.reached(16, part: first.index, progress: nil) == 16, "a stopped part ends at its next report")
    }

    /// Whatever the parts and however they are split while the cores fold them, the lists are
    /// those of one fold through the log, and the state left is the state at its end. Checkpoints
    /// every 13 or 7 actions fall between the parts' reports (every 1, 2 or 4 seqs here), so
    /// parts split there fold on past a report to end at one.
    @Test(arguments: [(2, 16), (3, 13), (5, 13), (9, 7), (9, 16)] as [(UInt64, UInt64)])
    func listsOfPartsSplitWhileRunningAreThoseOfOneFold(minimumPart: UInt64, checkpointEvery: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let (timeline, states) = try await Self.log(in: directory, count: 160, seed: minimumPart, checkpointEvery: checkpointEvery)
        var whole = JSONValue.object([:])
        let expected = ChangeLists(try timeline.changePostings(from: 1, through: 160, state: &whole))
        for _ in 0..<5 {
            var state = JSONValue.object([:])
            let reports = Mutex<[UInt64]>([])
            let lists = try timeline.changeListsOnAllCores(
                from: 1, through: 160, state: &state, minimumPart: minimumPart, progress: { seq in reports.withLock { $0.append(seq) } }
            )
            #expect(lists.first == 1 && lists.last == 160)
            #expect(lists.lists.map(\.prefix) == expected.lists.map(\.prefix))
            #expect(lists.lists.map(\.seqs) == expected.lists.map(\.seqs))
            #expect(state == states[160])
            #expect(reports.withLock { $0.allSatisfy { (1...160).contains($0) } })
        }
    }
}

extension ChangeIndexPartsTests {
    /// A fold told at a report to end at a later seq (a split's boundary at a checkpoint) folds
    /// on to exactly that seq, and one told to end where it is ends there.
    @Test func aFoldEndsExactlyWhereItIsTold() async throws {
        let directory = try TemporaryDirectory()
        let (timeline, states) = try await Self.log(in: directory, count: 60, seed: 3)
        for (told, at) in [(13, 8), (8, 8), (40, 16)] as [(UInt64, UInt64)] {
            var short = JSONValue.object([:])
            let expected = ChangeLists(try timeline.changePostings(from: 1, through: told, state: &short))
            var state = JSONValue.object([:])
            var asked: [UInt64] = []
            let lists = ChangeLists(try timeline.changePostings(from: 1, through: 60, state: &state, checkEvery: 8) { seq in
                asked.append(seq)
                return seq >= at ? told : 60
            })
            #expect(lists.last == told && state == states[Int(told)])
            #expect(lists.lists.map(\.prefix) == expected.lists.map(\.prefix))
            #expect(lists.lists.map(\.seqs) == expected.lists.map(\.seqs))
            #expect(asked == Array(stride(from: 8, through: told, by: 8)))
        }
    }

    /// A log folded in commits whose appends run beside the next commit's folding: the commits
    /// are appended in order and join into one fold's lists; an append refused or failed ends
    /// the run, nothing after it appended, and no append is left running.
    @Test func commitsAreAppendedInOrderBesideTheNextCommitsFolding() async throws {
        let directory = try TemporaryDirectory()
        let (timeline, states) = try await Self.log(in: directory, count: 160, seed: 11)
        var whole = JSONValue.object([:])
        let expected = ChangeLists(try timeline.changePostings(from: 1, through: 160, state: &whole))

        // Every commit appended, in order.
        let appended = Mutex<[ChangeLists]>([])
        var state = JSONValue.object([:])
        let outcome = try timeline.foldChangeIndexCommits(
            after: 0, state: &state, commitSize: 23, minimumPart: 5, latest: { 160 },
            append: { lists in
                appended.withLock { $0.append(lists) }
                return true
            }
        )
        #expect(outcome.through == 160 && !outcome.moved)
        #expect(state == states[160])
        let commits = appended.withLock { $0 }
        #expect(commits.map(\.first) == stride(from: 1, through: 139, by: 23).map { Optional(UInt64($0)) })
        let joined = ChangeLists.joining(commits)
        #expect(joined.lists.map(\.prefix) == expected.lists.map(\.prefix))
        #expect(joined.lists.map(\.seqs) == expected.lists.map(\.seqs))

        // The third commit refused: the run ends at the second's end, nothing after it offered.
        let offered = Mutex<[UInt64]>([])
        var again = JSONValue.object([:])
        let refused = try timeline.foldChangeIndexCommits(
            after: 0, state: &again, commitSize: 23, minimumPart: 5, latest: { 160 },
            append: { lists in
                offered.withLock { $0.append(lists.first!) }
                return lists.first! < 47
            }
        )
        #expect(refused.moved && refused.through == 46)
        #expect(offered.withLock { $0 } == [1, 24, 47])

        // The second commit's append fails: the error comes out, nothing after it offered.
        offered.withLock { $0.removeAll() }
        var third = JSONValue.object([:])
        #expect(throws: StoreError.self) {
            _ = try timeline.foldChangeIndexCommits(
                after: 0, state: &third, commitSize: 23, minimumPart: 5, latest: { 160 },
                append: { lists throws(StoreError) in
                    offered.withLock { $0.append(lists.first!) }
                    if lists.first! == 24 { throw StoreError(.storage, "the disk is full") }
                    return true
                }
            )
        }
        #expect(offered.withLock { $0 } == [1, 24])
    }

    /// The log grows while the last commit's append runs (the journal's applier commits actions
    /// meanwhile, leaving out their entries: the index has not reached them yet): the fold looks
    /// at the log again once that append is in, and folds what came. Stopping at the log's end as
    /// first asked left the index behind for good, every later commit of the applier's not
    /// continuing it.
    @Test func theLogGrowingDuringTheLastAppendIsFoldedToo() async throws {
        let directory = try TemporaryDirectory()
        let (timeline, states) = try await Self.log(in: directory, count: 160, seed: 12)
        let end = Mutex<UInt64>(100)
        let appended = Mutex<[UInt64]>([])
        var state = JSONValue.object([:])
        let outcome = try timeline.foldChangeIndexCommits(
            after: 0, state: &state, commitSize: 50, minimumPart: 5, latest: { end.withLock { $0 } },
            append: { lists in
                appended.withLock { $0.append(lists.last!) }
                // The append through 100, the log's end when asked, lets the applier commit
                // through 160 before it is in.
                if lists.last == 100 { end.withLock { $0 = 160 } }
                return true
            }
        )
        #expect(outcome.through == 160 && !outcome.moved)
        #expect(appended.withLock { $0 } == [50, 100, 150, 160])
        #expect(state == states[160])
    }
}
