import InMemoryTracing
import ReelCore
import ReelJSON
import ReelStore
import ReelTestSupport
import Testing
import Tracing

/// The writer's `commit` spans (`reeld --otlp-endpoint`): one per group commit, linked to the span
/// of each dispatch in it, a child of the dispatch's span when it is alone, with the seqs it made
/// durable; none without a tracer.
@Suite struct CommitSpanTests {
    static func set(_ value: Int64) -> Action {
        Action(type: "set", payload: ["path": "/n", "value": .int(value)])
    }

    @Test func aLoneDispatchsCommitIsAChildOfItsSpan() async throws {
        let dir = try TemporaryDirectory()
        let tracer = InMemoryTracer()
        var options = StoreOptions()
        options.tracer = tracer
        let store = try Store(path: dir.path, definition: .stock, options: options)
        let caller = tracer.startSpan("caller")
        var batch = DispatchBatch()
        let ticket = store.prepare(batch: [Self.set(1), Self.set(2)], traceContext: caller.context, into: &batch)
        store.submit(batch)
        #expect(try await ticket.result().seqs == 1...2)
        caller.end()
        await store.close()

        let commits = tracer.finishedSpans.filter { $0.operationName == "commit" }
        try #require(commits.count == 1)
        let commit = commits[0]
        #expect(commit.traceID == caller.context.inMemorySpanContext?.traceID)
        #expect(commit.parentSpanID == caller.context.inMemorySpanContext?.spanID)
        #expect(commit.links.count == 1)
        #expect(commit.attributes["reel.seq.first"]?.toSpanAttribute() == .int64(1))
        #expect(commit.attributes["reel.seq.last"]?.toSpanAttribute() == .int64(2))
        #expect(commit.attributes["reel.commit.actions"]?.toSpanAttribute() == .int64(2))
        #expect(commit.events.map(\.name) == ["reduced"])
        #expect(commit.status == nil)
    }

    @Test func aGroupCommitLinksToEveryDispatchInIt() async throws {
        let dir = try TemporaryDirectory()
        let tracer = InMemoryTracer()
        var options = StoreOptions()
        options.tracer = tracer
        let store = try Store(path: dir.path, definition: .stock, options: options)
        let callers = (0..<20).map { _ in tracer.startSpan("caller") }
        var batch = DispatchBatch()
        let tickets = callers.enumerated().map { index, caller in
            store.prepare(batch: [Self.set(Int64(index))], traceContext: caller.context, into: &batch)
        }
        // A refused one among them: its span is linked all the same, and nothing is logged for it.
        let refused = store.prepare(batch: [Action(type: "nope")], traceContext: callers[0].context, into: &batch)
        store.submit(batch)
        var seqs: [UInt64] = []
        for ticket in tickets { seqs.append(try await ticket.result().seq) }
        await #expect(throws: StoreError.self) { try await refused.result() }
        #expect(seqs == Array(1...20))
        await store.close()

        // However the writer grouped them, the commits' links name every caller once (the refused
        // dispatch's caller twice), and their seq ranges tile 1...20.
        let commits = tracer.finishedSpans.filter { $0.operationName == "commit" }
        let linked = commits.flatMap { $0.links.compactMap { $0.context.inMemorySpanContext?.spanID } }
        let callerIDs = callers.compactMap { $0.context.inMemorySpanContext?.spanID }
        #expect(linked.sorted() == (callerIDs + [callerIDs[0]]).sorted())
        var covered: [Int64] = []
        for commit in commits {
            guard case .int64(let first)? = commit.attributes["reel.seq.first"]?.toSpanAttribute(),
                case .int64(let last)? = commit.attributes["reel.seq.last"]?.toSpanAttribute()
            else { continue }
            covered += Array(first...last)
        }
        #expect(covered.sorted() == Array(1...20))
        for commit in commits where commit.links.count > 1 {
            #expect(commit.parentSpanID == nil, "a commit of several dispatches belongs to none of their traces")
        }
    }

    @Test func withoutATracerThereAreNoSpans() async throws {
        let dir = try TemporaryDirectory()
        let tracer = InMemoryTracer()
        let store = try Store(path: dir.path, definition: .stock)
        let caller = tracer.startSpan("caller")
        var batch = DispatchBatch()
        let ticket = store.prepare(batch: [Self.set(1)], traceContext: caller.context, into: &batch)
        store.submit(batch)
        _ = try await ticket.result()
        caller.end()
        await store.close()
        #expect(tracer.finishedSpans.map(\.operationName) == ["caller"])
    }
}
