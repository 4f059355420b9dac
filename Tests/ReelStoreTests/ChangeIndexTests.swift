import ReelCore
import ReelJSON
import ReelStorage
@testable import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// The change index and the answers built on it (`history` by path, `blame`), against brute force:
/// every state of a random log rebuilt and compared at every seq, for every path the log ever had.
@Suite(.heavy) struct ChangeIndexTests {
    typealias SplitMix = FindTests.SplitMix

    /// Random stock actions over the current state: every type, paths that exist and paths that
    /// do not, escaped member names, arrays shifted under more elements than the index follows,
    /// a wide object added at once, patches whose operations build on one another, reverts.
    struct Actions {
        var random: SplitMix
        static let names = ["a", "b", "c", "x~y", "s/l", "0"]

        mutating func value(depth: Int = 0) -> JSONValue {
            switch Int.random(in: 0..<(depth > 1 ? 4 : 7), using: &random) {
            case 0: return .int(Int64.random(in: -3...3, using: &random))
            case 1: return .string(Self.names.randomElement(using: &random)!)
            case 2: return .bool(Bool.random(using: &random))
            case 3: return .null
            case 4: return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth: depth + 1) })
            default:
                var members: JSONObject = [:]
                for _ in 0..<Int.random(in: 0...3, using: &random) { members[Self.names.randomElement(using: &random)!] = value(depth: depth + 1) }
                return .object(members)
            }
        }

        /// A pointer in `state`: an existing node, or a new member or index of an existing container.
        mutating func pointer(in state: JSONValue, existing: Bool) -> JSONPointer {
            var nodes: [(JSONPointer, JSONValue)] = []
            ChangeIndexTests.forEachNode(of: state, at: .root) { nodes.append(($0, $1)); return nodes.count < 2_000 }
            // Small containers more often than the elements of the large ones.
            let small = nodes.filter { !$0.0.tokens.contains("big") && !$0.0.tokens.contains("wide") }
            let pool = small.isEmpty || Int.random(in: 0..<5, using: &random) == 0 ? nodes : small
            let (pointer, value) = pool.randomElement(using: &random)!
            if existing { return pointer }
            switch value {
            case .object: return pointer.appending(Self.names.randomElement(using: &random)!)
            case .array(let elements):
                return pointer.appending(Bool.random(using: &random) ? "-" : String(Int.random(in: 0...elements.count, using: &random)))
            default: return pointer.appending("a")
            }
        }

        mutating func next(state: JSONValue, seq: UInt64) -> Action {
            let existing = pointer(in: state, existing: true)
            let fresh = pointer(in: state, existing: false)
            switch Int.random(in: 0..<16, using: &random) {
            case 0: return Action(type: "set", payload: ["path": .string(existing.description), "value": value()])
            case 1: return Action(type: "set", payload: ["path": .string(fresh.description), "value": value()])
            case 2: return Action(type: "remove", payload: ["path": .string(existing.description)])
            case 3: return Action(type: "increment", payload: ["path": .string(Bool.random(using: &random) ? existing.description : fresh.description), "by": .int(Int64.random(in: -1...2, using: &random))])
            case 4: return Action(type: "append", payload: ["path": .string(Bool.random(using: &random) ? existing.description : fresh.description), "value": value()])
            case 5: return Action(type: "merge", payload: mergePatch(over: state, depth: 0))
            case 6, 7: return Action(type: "patch", payload: .array((0..<Int.random(in: 1...3, using: &random)).map { _ in operation(state) }))
            case 8 where seq > 2: return Action(type: "@revert", payload: ["to": .int(Int64.random(in: 1..<Int64(seq), using: &random))])
            case 9: return Action(type: "remove", payload: ["path": "/big/0"])
            case 10: return Action(type: "patch", payload: [["op": "add", "path": "/big/1", "value": value()]])
            case 11 where Int.random(in: 0..<4, using: &random) == 0:
                return Action(type: "set", payload: ["path": "/big", "value": .array((0..<600).map { .int(Int64($0 % 7)) })])
            case 12 where Int.random(in: 0..<4, using: &random) == 0:
                var members: JSONObject = [:]
                for index in 0..<600 { members["m\(index)"] = [ "v": .int(Int64(index % 3)) ] }
                return Action(type: "set", payload: ["path": "/wide", "value": .object(members)])
            case 13: return Action(type: "set", payload: ["path": "", "value": Bool.random(using: &random) ? state : value()])
            default: return Action(type: "set", payload: ["path": .string(fresh.description), "value": value()])
            }
        }

        mutating func mergePatch(over state: JSONValue, depth: Int) -> JSONValue {
            var members: JSONObject = [:]
            let existingKeys = state.objectValue.map { $0.keys.sorted() } ?? []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let key = (existingKeys + Self.names).randomElement(using: &random)!
                switch Int.random(in: 0..<4, using: &random) {
                case 0: members[key] = .null
                case 1 where depth < 2: members[key] = mergePatch(over: state.objectValue?[key] ?? .null, depth: depth + 1)
                default: members[key] = value()
                }
            }
            return .object(members)
        }

        mutating func operation(_ state: JSONValue) -> JSONValue {
            let existing = pointer(in: state, existing: true).description
            let other = pointer(in: state, existing: true).description
            let fresh = pointer(in: state, existing: false).description
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return ["op": "add", "path": .string(fresh), "value": value()]
            case 1: return ["op": "remove", "path": .string(existing)]
            case 2: return ["op": "replace", "path": .string(existing), "value": value()]
            case 3: return ["op": "move", "from": .string(existing), "path": .string(fresh)]
            case 4: return ["op": "copy", "from": .string(other), "path": .string(fresh)]
            default: return ["op": "test", "path": .string(existing), "value": state.value(at: try! JSONPointer(existing)) ?? .null]
            }
        }
    }

    static func forEachNode(of value: JSONValue, at pointer: JSONPointer, _ body: (JSONPointer, JSONValue) -> Bool) {
        guard body(pointer, value) else { return }
        switch value {
        case .object(let members): for key in members.keys.sorted() { forEachNode(of: members[key]!, at: pointer.appending(key), body) }
        case .array(let elements): for (index, element) in elements.enumerated() { forEachNode(of: element, at: pointer.appending(String(index)), body) }
        default: break
        }
    }

    /// Dispatches `count` random actions (refused ones are not counted); returns every state,
    /// `states[s]` the state at seq `s`, as the store published them.
    static func fill(_ store: Store<JSONValue>, count: Int, seed: UInt64) async throws -> [JSONValue] {
        var actions = Actions(random: SplitMix(state: seed))
        var states: [JSONValue] = [.object([:])]
        while states.count <= count {
            let snapshot = store.snapshot
            let action = actions.next(state: snapshot.state, seq: snapshot.seq)
            do {
                try await store.dispatch(action)
            } catch {
                continue
            }
            states.append(store.snapshot.state)
        }
        return states
    }

    /// `blamed` (blame at `seq`) names every leaf of the state at `seq`, each with the last action
    /// that changed it, as `states` (the state after each seq) show.
    static func expectBlame(
        _ blamed: BlameResult, at seq: UInt64, matches states: [JSONValue], _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var leaves: [JSONPointer] = []
        Timeline<JSONValue>.forEachLeafForTests(of: states[Int(seq)]) { leaves.append($0) }
        #expect(blamed.entries.map(\.path) == leaves, "\(context)the leaves at \(seq)", sourceLocation: sourceLocation)
        for entry in blamed.entries {
            let expected = bruteForce(Array(states.prefix(Int(seq) + 1)), entry.path).last
            #expect(entry.action?.seq == expected, "\(context)blame of \(entry.path) at \(seq)", sourceLocation: sourceLocation)
        }
    }

    /// The seqs at which the value at `path` differs from the seq before, from the states.
    static func bruteForce(_ states: [JSONValue], _ path: JSONPointer) -> [UInt64] {
        (1..<states.count).filter { states[$0 - 1].value(at: path) != states[$0].value(at: path) }.map(UInt64.init)
    }

    /// Every pointer any state had, a sample when there are many, and some no state had.
    static func probes(_ states: [JSONValue], seed: UInt64, count: Int) -> [JSONPointer] {
        var all = Set<JSONPointer>()
        for state in states { forEachNode(of: state, at: .root) { pointer, _ in all.insert(pointer).inserted || true } }
        var random = SplitMix(state: seed)
        let sorted = all.sorted { $0.description < $1.description }
        var chosen = Set(sorted.filter { !$0.tokens.contains("big") && !$0.tokens.contains("wide") }.shuffled(using: &random).prefix(count))
        chosen.formUnion(sorted.filter { $0.tokens.contains("big") || $0.tokens.contains("wide") }.shuffled(using: &random).prefix(count / 4))
        chosen.formUnion([["big", "5"], ["big", "599"], ["wide", "m7", "v"], ["never"], ["a", "never", "deeper"]].map { JSONPointer(tokens: $0) })
        return chosen.sorted { $0.description < $1.description }
    }

    func checkAnswers(_ timeline: Timeline<JSONValue>, states: [JSONValue], seed: UInt64, context: String, probes: Int = 50) throws {
        let latest = UInt64(states.count - 1)
        for path in Self.probes(states, seed: seed, count: probes) {
            let expected = Self.bruteForce(states, path)
            let all = try timeline.changedSeqs(path: path, limit: 10_000)
            #expect(all.seqs == expected, "\(context): \(path)")
            #expect(all.next == nil)
            let newest = try timeline.changedSeqs(path: path, newestFirst: true, limit: 10_000)
            #expect(newest.seqs == expected.reversed(), "\(context): \(path) newest first")
            // A window, by pages of 3, both ways.
            let (low, high) = (latest / 4, latest - latest / 5)
            let window = expected.filter { $0 >= low && $0 <= high }
            for newestFirst in [false, true] {
                var paged: [UInt64] = []
                var (from, to): (UInt64, UInt64) = (low, high)
                while true {
                    let page = try timeline.changedSeqs(path: path, from: from, through: to, newestFirst: newestFirst, limit: 3)
                    #expect(page.seqs.count <= 3)
                    paged += page.seqs
                    guard let next = page.next else { break }
                    if newestFirst { to = next } else { from = next }
                }
                #expect(paged == (newestFirst ? window.reversed() : window), "\(context): \(path) in \(low)…\(high) by pages of 3, newest first: \(newestFirst)")
            }
        }
        // Blame of the whole state at a few seqs: each leaf's last change.
        for seq in [latest, latest / 2, latest / 3 + 1] {
            let blamed = try timeline.blame(at: seq, limit: 100_000)
            if seq == latest {
                #expect(try timeline.blame(limit: 100_000, known: (latest, states[Int(latest)])) == blamed, "\(context): blame of a state in memory")
            }
            Self.expectBlame(blamed, at: seq, matches: states, "\(context): ")
        }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func answersEqualReplayingEverySeq(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        var options = StoreOptions(checkpointEvery: 37, storage: .init(durable: false))
        // Half the runs keep the last actions in the journal (not yet indexed): replayed.
        if seed % 2 == 0 { options.storage.journalApplyDelay = 3_600 }
        let store = try Store(path: path, definition: .stock, options: options)
        let states = try await Self.fill(store, count: 120, seed: seed)
        try checkAnswers(store.timeline, states: states, seed: seed, context: "live, seed \(seed)")
        await store.close()
        #expect(store.timeline.indexedThrough() == UInt64(states.count - 1), "the index takes every action once the journal is drained")
        try checkAnswers(store.timeline, states: states, seed: seed, context: "after close, seed \(seed)")
    }

    /// The actions the stock reducer applies and records in one walk come out as the prediction
    /// and the reducer make them: the same state, the same changes recorded; every other action
    /// (and every failing one) is declined with the state and the recorder untouched.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func applyingAndRecordingInOneWalkEqualsPredictingThenApplying(seed: UInt64) throws {
        var actions = Actions(random: SplitMix(state: seed))
        var state: JSONValue = ["a": ["b": 1, "0": [1, 2]], "s/l": "x"]
        var taken = 0
        for seq in 1...UInt64(600) {
            var action = actions.next(state: state, seq: seq)
            if action.type == "@revert" { continue }
            // More of the shapes it takes: single operations and increments of what is there.
            if seq % 3 == 0, case .array(let operations) = action.payload, let first = operations.first {
                action = Action(type: "patch", payload: [first])
            }
            if seq % 7 == 0 {
                action = Action(type: "increment", payload: ["path": .string(actions.pointer(in: state, existing: true).description)])
            }
            let envelope = ActionEnvelope(seq: seq, action: action, time: Timestamp(nanosecondsSince1970: 0), peer: Peer(uid: 0, gid: 0, pid: 0))
            var fused = state
            var fusedRecorder = JSONChangeRecorder()
            let applied = JSONDocumentReducer.applyRecordingChanges(envelope, to: &fused, into: &fusedRecorder)

            var expected = state
            var expectedRecorder = JSONChangeRecorder()
            let predicted = JSONDocumentReducer.predictChanges(of: envelope, in: state, into: &expectedRecorder)
            let reduced = Result { () throws(ReducerError) in try JSONDocumentReducer().reduce(into: &expected, action: envelope) }
            if case .failure = reduced {
                #expect(!applied, "seq \(seq): \(action.type) \(action.payload) applied where the reducer refuses it")
                continue
            }
            if !predicted {
                expectedRecorder.startEdit()
                expectedRecorder.record(at: [], from: state, to: expected)
            }
            if applied {
                taken += 1
                #expect(fused == expected, "seq \(seq): \(action.type) \(action.payload)")
                #expect(fusedRecorder.changes == expectedRecorder.changes, "seq \(seq): \(action.type) \(action.payload)")
            } else {
                #expect(fused == state && fusedRecorder.changes.isEmpty, "seq \(seq): declined but changed something")
            }
            state = expected
        }
        #expect(taken > 50, "too few actions of the shapes taken to say anything: \(taken)")
    }

    /// A reducer that cannot predict its changes (a typed app's): the journal's applier folds
    /// each commit into a copy of its own and compares the states, converting each once.
    @Test(arguments: [7, 8] as [UInt64])
    func aReducerThatCannotPredictIsIndexedByComparingStates(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var definition = StoreDefinition<JSONValue>.stock
        definition.predictChanges = nil
        let store = try Store(path: directory.sub("data"), definition: definition, options: StoreOptions(checkpointEvery: 37, storage: .init(durable: false)))
        let states = try await Self.fill(store, count: 100, seed: seed)
        await store.close()
        #expect(store.timeline.indexedThrough() == 100)
        try checkAnswers(store.timeline, states: states, seed: seed, context: "compared, seed \(seed)", probes: 30)
    }

    /// Fills a store opened with `options`, checks its answers once closed, and lets it go (so
    /// that the directory can be opened again in this process).
    func filledAndClosed(_ path: String, options: StoreOptions, count: Int, seed: UInt64, indexed: UInt64) async throws -> [JSONValue] {
        let store = try Store(path: path, definition: .stock, options: options)
        let states = try await Self.fill(store, count: count, seed: seed)
        await store.close()
        #expect(store.timeline.indexedThrough() == indexed)
        try checkAnswers(store.timeline, states: states, seed: seed, context: "before reopening", probes: 30)
        return states
    }

    /// The writer records changes as it folds: a batch it undoes part-way leaves none of its
    /// actions' changes behind, and the seqs it would have taken go to the next actions.
    @Test func aBatchUndonePartWayLeavesNothingInTheIndex() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store(path: directory.sub("data"), definition: .stock, options: StoreOptions(storage: .init(durable: false)))
        let set: @Sendable (String, Int) -> Action = { path, value in Action(type: "set", payload: ["path": .string(path), "value": .int(Int64(value))]) }
        await #expect(throws: StoreError.self) {
            try await store.dispatch(batch: [set("/a", 1), set("/z", 1), Action(type: "remove", payload: ["path": "/missing"])])
        }
        #expect(try await store.dispatch(batch: [set("/b", 1), set("/c", 2)]).seqs == 1...2)
        #expect(try await store.dispatch(set("/a", 5)).seq == 3)
        // Many at once, so that groups hold accepted dispatches before and after undone batches.
        await withTaskGroup(of: Void.self) { tasks in
            for k in 0..<64 {
                tasks.addTask {
                    if k % 2 == 0 {
                        _ = try? await store.dispatch(set("/k\(k)", k))
                    } else {
                        _ = try? await store.dispatch(batch: [set("/z\(k)", k), Action(type: "remove", payload: ["path": "/missing"])])
                    }
                }
            }
        }
        await store.close()
        let timeline = store.timeline
        #expect(timeline.indexedThrough() == 35)
        for (path, seqs) in [("/a", [3]), ("/z", []), ("/z1", []), ("/z63", []), ("/b", [1]), ("/c", [2])] as [(String, [UInt64])] {
            #expect(try timeline.changedSeqs(path: JSONPointer(path)).seqs == seqs, "\(path)")
        }
        #expect(try timeline.changedSeqs(path: .root, limit: 1_000).seqs == Array(1...35))
        for k in stride(from: 0, to: 64, by: 2) {
            let seqs = try timeline.changedSeqs(path: JSONPointer("/k\(k)")).seqs
            let action = try seqs.first.flatMap { try store.directory.envelope(at: $0) }
            #expect(seqs.count == 1 && action?.payload["path"] == .string("/k\(k)"), "/k\(k)")
        }
    }

    /// Past the index, a long range is replayed in parts on every core, cut at checkpoints and
    /// taken in the order asked: the answers (every page, both ways, blame at several seqs) are
    /// those of one walk and of the states themselves, however small the parts.
    @Test(arguments: [1, 7, 64, 100_000] as [UInt64])
    func answersReplayedInPartsAreThoseOfOneWalk(partMinimum: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 20, storage: .init(durable: false))
        options.changeIndex = false
        let store = try Store(path: directory.sub("data"), definition: .stock, options: options)
        let states = try await Self.fill(store, count: 260, seed: 21)
        await store.close()
        var timeline = store.timeline
        timeline.replayPartMinimum = partMinimum
        #expect(timeline.indexedThrough() == 0)
        let parts = try timeline.replayParts(after: 0, through: 260)
        #expect(parts.first?.lowerBound == 0 && parts.last?.upperBound == 260)
        #expect(zip(parts, parts.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "parts \(parts) do not follow each other")
        #expect(partMinimum > 100 ? parts.count == 1 : parts.count > 1, "parts \(parts)")
        try checkAnswers(timeline, states: states, seed: 21, context: "parts of at least \(partMinimum)", probes: 20)
    }

    /// Blame past the index replays the newest stretch (from the newest checkpoint) first and the
    /// rest only for the leaves it did not settle: a leaf changed in the newest stretch, one changed
    /// last in the middle, one changed only in the first actions, one never changed after its
    /// first action, each blamed on its last change at every seq (whichever stretch between
    /// checkpoints holds it); the rest walked in one part, or in parts on every core.
    @Test(arguments: [32_768, 2] as [UInt64])
    func blamePastTheIndexFindsEachLastChangeWhicheverStretchHoldsIt(partMinimum: UInt64) async throws {
        let directory = try TemporaryDirectory()
        var options = StoreOptions(checkpointEvery: 10, storage: .init(durable: false))
        options.changeIndex = false
        let store = try Store(path: directory.sub("data"), definition: .stock, options: options)
        let set: @Sendable (String, Int) -> Action = { path, value in Action(type: "set", payload: ["path": .string(path), "value": .int(Int64(value))]) }
        var states: [JSONValue] = [.object([:])]
        for seq in 1...64 {
            let action: Action = switch seq {
            case 1: set("/once", 1)
            case 2, 3: set("/early", seq)
            case 20: set("/middle", seq)
            case 45: Action(type: "patch", payload: [["op": "add", "path": "/nested", "value": ["x": 1, "y": ["z": 2]]]])
            case 50: set("/nested/y/z", 3)
            default: set("/often", seq)
            }
            try await store.dispatch(action)
            states.append(store.snapshot.state)
        }
        await store.close()
        var timeline = store.timeline
        timeline.replayPartMinimum = partMinimum
        #expect(timeline.indexedThrough() == 0)
        let checkpoints = try store.directory.checkpointSeqs(from: 1, through: 64, reducer: StoreDefinition<JSONValue>.stock.identity)
        // (Checkpoints are encoded off the write path: where they land varies from run to run.)
        #expect(checkpoints.contains { $0 > 3 && $0 < 64 }, "no checkpoint between the first actions and the last: \(checkpoints)")
        for seq in UInt64(1)...64 {
            let blamed = try timeline.blame(at: seq, limit: 1_000)
            Self.expectBlame(blamed, at: seq, matches: states, "")
        }
        let last = try timeline.blame(limit: 1_000).entries.map { ($0.path.description, $0.action?.seq) }
        #expect(last.map(\.0) == ["/early", "/middle", "/nested/x", "/nested/y/z", "/often", "/once"])
        #expect(last.map(\.1) == [3, 20, 45, 50, 64, 1])
    }

    @Test func aStoreWithoutTheIndexAnswersTheSameAndBuildsItWhenOpenedWithIt() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        var options = StoreOptions(checkpointEvery: 25, storage: .init(durable: false))
        options.changeIndex = false
        let states = try await filledAndClosed(path, options: options, count: 80, seed: 11, indexed: 0)
        options.changeIndex = true
        // Built in parts of at least 10 actions, on as many threads as there are cores.
        options.changeIndexBuildMinimumPart = 10
        let reopened = try Store(path: path, definition: .stock, options: options)
        // Answered right while the index is built in the background (by replaying), and after.
        try checkAnswers(reopened.timeline, states: states, seed: 11, context: "index being built", probes: 10)
        await reopened.changeIndexCaughtUp()
        #expect(reopened.timeline.indexedThrough() == 80)
        try checkAnswers(reopened.timeline, states: states, seed: 11, context: "index built at open")
        await reopened.close()
    }

    /// A store closed once its index is built in the background lets go of its directory: opened
    /// again at once in the same process, the directory is not found still open (the build's
    /// thread held it for a moment after the build ended).
    @Test func aStoreClosedAfterItsBuildOpensAgainAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        var options = StoreOptions(storage: .init(durable: false))
        options.changeIndex = false
        _ = try await filledAndClosed(path, options: options, count: 40, seed: 5, indexed: 0)
        for round in 0..<20 {
            options.changeIndex = true
            do {
                let store = try Store(path: path, definition: .stock, options: options)
                await store.changeIndexCaughtUp()
                #expect(store.timeline.indexedThrough() == 40)
                await store.close()
            }
            options.changeIndex = false
            do {
                let store = try Store(path: path, definition: .stock, options: options)
                try store.directory.resetChangeIndex(reducer: StoreDefinition<JSONValue>.stock.identity)
                await store.close()
            }
            _ = round
        }
    }

    /// An index behind the log is built in the background while the store serves: the actions
    /// dispatched meanwhile are in it once it has caught up, exactly once each.
    @Test func anIndexBehindIsBuiltInTheBackgroundWhileTheStoreServes() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        var options = StoreOptions(storage: .init(durable: false))
        options.changeIndex = false
        let set: @Sendable (Int) -> Action = { Action(type: "set", payload: ["path": .string("/k\($0 % 300)"), "value": .int(Int64($0))]) }
        do {
            let store = try Store(path: path, definition: .stock, options: options)
            for first in stride(from: 0, to: 60_000, by: 1_000) {
                try await store.dispatch(batch: (first..<(first + 1_000)).map(set))
            }
            await store.close()
        }
        options.changeIndex = true
        options.changeIndexBuildMinimumPart = 5_000
        let store = try Store(path: path, definition: .stock, options: options)
        // Dispatches while the build runs (each its own commit, with entries of the writer's).
        for value in 60_000..<60_600 { try await store.dispatch(set(value)) }
        await store.changeIndexCaughtUp()
        // The journal's last commits: in the index once it has drained them.
        await store.close()
        let timeline = store.timeline
        #expect(timeline.indexedThrough() == 60_600)
        for key in [0, 17, 299] {
            // Seq s set /k((s - 1) % 300): every 300th seq from key + 1.
            let expected = Array(stride(from: UInt64(key + 1), through: 60_600, by: 300))
            #expect(try timeline.changedSeqs(path: JSONPointer("/k\(key)"), limit: 10_000).seqs == expected, "/k\(key)")
        }
        #expect(try timeline.changedSeqs(path: .root, limit: 70_000).seqs == Array(1...60_600))
    }

    @Test func anIndexBuiltByAnotherReducerVersionIsRebuilt() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        var options = StoreOptions(checkpointEvery: 25, storage: .init(durable: false))
        let states = try await filledAndClosed(path, options: options, count: 60, seed: 5, indexed: 60)
        options.changeIndexBuildMinimumPart = 7
        var next = StoreDefinition<JSONValue>.stock
        next.identity.version = "1-next"
        let reopened = try Store(path: path, definition: next, options: options)
        #expect(try reopened.directory.changeIndexStatus()?.reducer == next.identity)
        await reopened.changeIndexCaughtUp()
        #expect(reopened.timeline.indexedThrough() == 60)
        try checkAnswers(reopened.timeline, states: states, seed: 5, context: "rebuilt for 1-next")
        await reopened.close()
    }
}

extension ChangeIndexTests {
    @Test func aDamagedListIsReportedNeverAnsweredFromAndRebuiltAtOpen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        let options = StoreOptions(checkpointEvery: 10, storage: .init(durable: false))
        do {
            let store = try Store(path: path, definition: .stock, options: options)
            for value in 1...30 {
                try await store.dispatch(Action(type: "set", payload: ["path": "/cart", "value": ["total": .int(Int64(value / 2))]]))
                try await store.dispatch(Action(type: "increment", payload: ["path": "/visits"]))
            }
            await store.close()
        }
        // The k-th set (seq 2k - 1) sets `/cart/total` to k / 2: created by the first, changed by
        // every even k.
        var expected: [UInt64] = [1]
        for k in stride(from: 2, through: 30, by: 2) { expected.append(UInt64(2 * k - 1)) }
        // The chunk of `/cart/total`'s list that starts at seq 1, one bit flipped.
        let pointer = Array("/cart/total".utf8)
        try damageStoredRecord(in: path, database: "changes", key: [0, 0, UInt8(pointer.count)] + pointer + seqKey(1), bit: 12)
        do {
            let data = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
            let report = try data.scanIntegrity()
            #expect(report.damage.map(\.kind) == [.changeIndex])
            #expect(report.damage.first?.key == "\"/cart/total\"")
            #expect(!report.logIsDamaged)
            let timeline = Timeline(directory: data, definition: .stock)
            #expect(try timeline.changedSeqs(path: try JSONPointer("/cart/total")).seqs == expected, "answered by replaying, not from the damaged list")
            #expect(try timeline.changedSeqs(path: try JSONPointer("/cart/total"), newestFirst: true).seqs == expected.reversed())
            #expect(try timeline.blame(path: try JSONPointer("/cart")).entries.map { $0.action?.seq } == [expected.last])
        }
        let reopened = try Store(path: path, definition: .stock, options: options)
        #expect(try reopened.directory.changeIndexDamage().isEmpty, "emptied when the store opened")
        await reopened.changeIndexCaughtUp()
        #expect(reopened.timeline.indexedThrough() == 60, "and built again")
        #expect(try reopened.timeline.changedSeqs(path: try JSONPointer("/cart/total")).seqs == expected)
        #expect(try reopened.timeline.changedSeqs(path: try JSONPointer("/visits")).seqs == (1...30).map { UInt64(2 * $0) })
        await reopened.close()
    }
}

extension Timeline where State == JSONValue {
    static func forEachLeafForTests(of value: JSONValue, _ body: (JSONPointer) -> Void) {
        ChangeIndexTests.forEachNode(of: value, at: .root) { pointer, node in
            switch node {
            case .object(let members) where !members.isEmpty: break
            case .array(let elements) where !elements.isEmpty: break
            default: body(pointer)
            }
            return true
        }
    }
}

