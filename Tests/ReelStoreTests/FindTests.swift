import ReelCore
import ReelJSON
@testable import ReelStore
import ReelTestSupport
import Testing

/// `Timeline.find`: every run of seqs at which a condition holds, against the brute-force answer
/// (the condition asked of the state rebuilt at every seq) on random logs with reverts.
@Suite(.heavy) struct FindTests {
    /// A generator with a seed, so a failure can be run again.
    typealias SplitMix = SeededGenerator

    /// A log of `count` actions over `/hp` and `/flag` that go up and down, with some reverts
    /// and actions the reducer refuses (never logged), checkpoints every `every`.
    static func randomStore(_ count: Int, seed: UInt64, every: UInt64, in directory: borrowing TemporaryDirectory) async throws -> Store<JSONValue> {
        var random = SplitMix(state: seed)
        let store = try Store(
            path: directory.sub("data"), definition: .stock, options: StoreOptions(checkpointEvery: every, storage: .init(durable: false))
        )
        try await store.dispatch(Action(type: "set", payload: ["path": "/hp", "value": 5]))
        var seq: UInt64 = 1
        while seq < UInt64(count) {
            let action: Action
            switch Int.random(in: 0..<10, using: &random) {
            case 0 where seq > 2:
                action = Action(type: "@revert", payload: ["to": .int(Int64(UInt64.random(in: 1..<seq, using: &random)))])
            case 1:
                action = Action(type: "set", payload: ["path": "/flag", "value": .bool(Bool.random(using: &random))])
            case 2:
                action = Action(type: "merge", payload: ["flag": nil])
            case 3:
                action = Action(type: "remove", payload: ["path": "/hp"])
            default:
                action = Action(type: "increment", payload: ["path": "/hp", "by": .int(Int64.random(in: -3...3, using: &random))])
            }
            do {
                try await store.dispatch(action)
                seq += 1
            } catch {
                continue  // (removing an /hp that is not there: refused, nothing logged)
            }
        }
        return store
    }

    /// The runs computed the slow way: the condition at every seq of the window.
    static func bruteForce(_ timeline: Timeline<JSONValue>, from: UInt64, to: UInt64, latest: UInt64, _ condition: JSONCondition) throws -> [SeqRange] {
        var ranges: [SeqRange] = []
        var open: UInt64?
        for seq in from...to {
            let holds = condition.holds(in: try timeline.state(at: seq))
            if holds, open == nil { open = seq }
            if !holds, let start = open {
                ranges.append(SeqRange(from: start, to: seq - 1))
                open = nil
            }
        }
        if let start = open { ranges.append(SeqRange(from: start, to: to == latest ? nil : to)) }
        return ranges
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func theRunsAreThoseOfEverySeq(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.randomStore(300, seed: seed, every: 37, in: directory)
        defer { Task { await store.close() } }
        let timeline = store.timeline
        let latest = try timeline.latestSeq()
        let conditions = ["/hp <= 2", "/hp > 6", "exists /flag", "/flag == true", "missing /hp"].map { try! JSONCondition(parsing: $0) }
        for condition in conditions {
            for (from, to) in [(1, latest), (1, latest / 2), (latest / 3, latest), (latest, latest), (5, 5)] as [(UInt64, UInt64)] {
                let expected = try Self.bruteForce(timeline, from: from, to: to, latest: latest, condition)
                let found = try timeline.find(from: from, to: to) { condition.holds(in: $0) }
                #expect(found.ranges == expected, "\(condition) in \(from)…\(to), seed \(seed)")
                #expect(found.next == nil)
                // Page by page, two runs at a time, the same runs.
                var paged: [SeqRange] = []
                var next: UInt64? = from
                while let start = next {
                    let page = try timeline.find(from: start, to: to, limit: 2) { condition.holds(in: $0) }
                    #expect(page.ranges.count <= 2)
                    paged += page.ranges
                    next = page.next
                }
                #expect(paged == expected, "\(condition) in \(from)…\(to) by pages of 2, seed \(seed)")
            }
        }
    }

    /// A log over a nested path whose ancestors come and go and change kind (objects, arrays,
    /// scalars), reached by every stock action type, patches that read elsewhere, and reverts.
    static func nestedStore(_ count: Int, seed: UInt64, in directory: borrowing TemporaryDirectory) async throws -> Store<JSONValue> {
        var random = SplitMix(state: seed)
        let store = try Store(
            path: directory.sub("data"), definition: .stock, options: StoreOptions(checkpointEvery: 29, storage: .init(durable: false))
        )
        var seq: UInt64 = 0
        while seq < UInt64(count) {
            let n = JSONValue.int(Int64.random(in: 0...9, using: &random))
            let action: Action
            switch Int.random(in: 0..<16, using: &random) {
            case 0 where seq > 2: action = Action(type: "@revert", payload: ["to": .int(Int64(UInt64.random(in: 1..<seq, using: &random)))])
            case 1: action = Action(type: "set", payload: ["path": "/a", "value": ["b": ["c": n, "d": 1]]])
            case 2: action = Action(type: "set", payload: ["path": "/a", "value": [["c": n]]])
            case 3: action = Action(type: "set", payload: ["path": "/a/b", "value": ["c": n]])
            case 4: action = Action(type: "merge", payload: ["a": ["b": ["c": n]]])
            case 5: action = Action(type: "merge", payload: ["a": nil])
            case 6: action = Action(type: "remove", payload: ["path": "/a/b"])
            case 7: action = Action(type: "patch", payload: [["op": "add", "path": "/a/b/c", "value": n]])
            case 8: action = Action(type: "patch", payload: [["op": "test", "path": "/x", "value": n], ["op": "replace", "path": "/a/b/c", "value": n]])
            case 9: action = Action(type: "patch", payload: [["op": "copy", "from": "/x", "path": "/a/b/c"]])
            case 10: action = Action(type: "set", payload: ["path": "/x", "value": n])
            case 11: action = Action(type: "increment", payload: ["path": "/a/b/c", "by": n])
            case 12: action = Action(type: "set", payload: ["path": "/a", "value": n])
            case 13: action = Action(type: "set", payload: ["path": "/a/b/e", "value": n])
            case 14: action = Action(type: "patch", payload: [["op": "move", "from": "/a/b/c", "path": "/x"]])
            default: action = Action(type: "append", payload: ["path": "/a/b/c", "value": n])
            }
            do {
                try await store.dispatch(action)
                seq += 1
            } catch {
                continue  // refused by the reducer: nothing logged
            }
        }
        return store
    }

    /// `find` by a condition goes from change to change of its path (through a skeleton of the
    /// state); its runs are those of every seq, whole and page by page, whatever happens above
    /// the path.
    @Test(arguments: [4, 5, 6, 7] as [UInt64])
    func aConditionIsAskedOnlyWhereItsPathChangedAndFindsTheSameRuns(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.nestedStore(260, seed: seed, in: directory)
        defer { Task { await store.close() } }
        let timeline = store.timeline
        let latest = try timeline.latestSeq()
        #expect(timeline.indexedThrough() > 0)
        let conditions = ["/a/b/c >= 5", "exists /a/b/c", "missing /a/b", "/a/b/c == 3", "exists /a/b/e", "/x < 4"]
            .map { try! JSONCondition(parsing: $0) }
        for condition in conditions {
            for (from, to) in [(1, latest), (latest / 3, latest * 2 / 3), (latest, latest)] as [(UInt64, UInt64)] {
                let expected = try Self.bruteForce(timeline, from: from, to: to, latest: latest, condition)
                let found = try timeline.find(condition, from: from, to: to)
                #expect(found.ranges == expected, "\(condition) in \(from)…\(to), seed \(seed)")
                var paged: [SeqRange] = []
                var next: UInt64? = from
                while let start = next {
                    let page = try timeline.find(condition, from: start, to: to, limit: 1)
                    paged += page.ranges
                    next = page.next
                }
                #expect(paged == expected, "\(condition) in \(from)…\(to) by pages of 1, seed \(seed)")
            }
        }
    }

    /// A part of the state at a seq, read from that part of the checkpoint before it and the
    /// actions that changed it since, is the part of the whole state rebuilt there, at every seq.
    @Test(arguments: [8, 9] as [UInt64])
    func aPartOfTheStateIsTheSameFromItsSkeletonAsFromTheWholeState(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.nestedStore(200, seed: seed, in: directory)
        defer { Task { await store.close() } }
        let timeline = store.timeline
        var fromSkeletons = 0
        for seq in 1...(try timeline.latestSeq()) {
            let whole = try timeline.state(at: seq)
            for pointer in ["/a", "/a/b", "/a/b/c", "/x", "/a/b/e"] {
                let path = try JSONPointer(pointer)
                if try timeline.skeleton(of: path, at: seq) != nil { fromSkeletons += 1 }
                do {
                    let value = try timeline.value(at: seq, path: path)
                    #expect(value == whole.value(at: path), "\(pointer) at \(seq), seed \(seed)")
                } catch {
                    #expect(error.code == .pathNotFound && whole.value(at: path) == nil, "\(pointer) at \(seq), seed \(seed): \(error)")
                }
            }
        }
        #expect(fromSkeletons > 250)  // (the rest: an action between reads elsewhere or reverts)
    }

    @Test func aWindowBeyondTheLogIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.randomStore(10, seed: 9, every: 100, in: directory)
        defer { Task { await store.close() } }
        let condition = try JSONCondition(parsing: "exists /hp")
        let beyond = #expect(throws: StoreError.self) { try store.timeline.find(from: 11) { condition.holds(in: $0) } }
        #expect(beyond?.code == .seqOutOfRange)
        #expect(throws: StoreError.self) { try store.timeline.find(to: 11) { condition.holds(in: $0) } }
    }
}
