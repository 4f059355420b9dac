import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// `history` by correlation id: the meta a dispatch gives is logged with each of its actions, kept
/// across a restart, and filtered on as `types` is, both ways, page after page.
@Suite(.heavy) struct CorrelationHistoryTests {
    static func set(_ path: String, _ value: JSONValue) -> Action {
        Action(type: "set", payload: ["path": .string(path), "value": value])
    }

    static func increment(_ path: String) -> Action {
        Action(type: "increment", payload: ["path": .string(path)])
    }

    /// Seqs 1…600: sets of /n, but every 100th an increment; every 50th (50, 100, …) in
    /// correlation "rare"; seqs 7 and 8 (one batch) in correlation "batch".
    func makeStore(_ dir: borrowing TemporaryDirectory) async throws -> Store<JSONValue> {
        let store = try Store(path: dir.path, definition: .stock, options: StoreOptions(checkpointEvery: 100))
        try await store.dispatch(batch: (1...6).map { Self.set("/n", .int(Int64($0))) })
        try await store.dispatch(batch: [Self.set("/b", 1), Self.increment("/b")], meta: ActionMeta(correlationId: "batch", source: "test"))
        var seq: UInt64 = 8
        for rare in stride(from: UInt64(50), through: 600, by: 50) {
            try await store.dispatch(batch: (seq + 1..<rare).map { Self.set("/n", .int(Int64($0))) })
            let action = rare % 100 == 0 ? Self.increment("/n") : Self.set("/n", .int(Int64(rare)))
            try await store.dispatch(action, meta: ActionMeta(correlationId: "rare", causationId: String(rare - 1)))
            seq = rare
        }
        return store
    }

    @Test func filtersByCorrelationIdBothWays() async throws {
        let dir = try TemporaryDirectory()
        let rare = (1...12).map { UInt64($0 * 50) }
        do {
            let store = try await makeStore(dir)
            let timeline = store.timeline
            let all = try timeline.history(limit: 1000).actions
            #expect(all.count == 600)
            #expect(all[49].meta == ActionMeta(correlationId: "rare", causationId: "49"))
            #expect(all[6].meta == ActionMeta(correlationId: "batch", source: "test"))
            #expect(all[7].meta == ActionMeta(correlationId: "batch", source: "test"))
            #expect(all[8].meta == nil)
            #expect(all.allSatisfy { $0.peer.exe == nil }, "in-process dispatches carry no exe")

            #expect(try timeline.history(limit: 1000, correlationId: "rare").actions.map(\.seq) == rare)
            #expect(try timeline.history(correlationId: "batch").actions.map(\.seq) == [7, 8])
            #expect(try timeline.history(types: ["increment"], correlationId: "rare").actions.map(\.seq) == rare.filter { $0 % 100 == 0 })
            #expect(try timeline.history(types: ["increment"], correlationId: "batch").actions.map(\.seq) == [8])
            #expect(try timeline.history(correlationId: "none").actions.isEmpty)
            #expect(try timeline.history(correlationId: "rare", newestFirst: true).actions.map(\.seq) == rare.reversed())

            // Pages of every size, oldest and newest first, join up to the whole answer.
            for limit in [1, 2, 5, 12] {
                for types in [nil, ["increment"]] as [Set<String>?] {
                    let expected = rare.filter { types == nil || $0 % 100 == 0 }
                    var ascending: [UInt64] = []
                    var from: UInt64? = 1
                    while let first = from {
                        let page = try timeline.history(from: first, limit: limit, types: types, correlationId: "rare")
                        #expect(page.actions.count <= limit)
                        ascending += page.actions.map(\.seq)
                        from = page.next
                    }
                    #expect(ascending == expected, "limit \(limit), types \(String(describing: types))")
                    var descending: [UInt64] = []
                    var to: UInt64? = 600
                    while let last = to {
                        let page = try timeline.history(to: last, limit: limit, types: types, correlationId: "rare", newestFirst: true)
                        #expect(page.actions.count <= limit)
                        descending += page.actions.map(\.seq)
                        to = page.next
                    }
                    #expect(descending == expected.reversed(), "limit \(limit), types \(String(describing: types))")
                }
            }
            await store.close()
        }
        // After a restart, from the data directory alone.
        let again = try Store(path: dir.path, definition: .stock)
        #expect(try again.timeline.history(limit: 1000, correlationId: "rare").actions.map(\.seq) == rare)
        #expect(try again.timeline.history(correlationId: "batch").actions.first?.meta == ActionMeta(correlationId: "batch", source: "test"))
        await again.close()
    }

    @Test func middlewareSeesTheMeta() async throws {
        let dir = try TemporaryDirectory()
        let seen = Mutex<[ActionMeta?]>([])
        var definition = StoreDefinition<JSONValue>.stock
        definition.middleware.append(MiddlewareFunction { action, _, context throws(ReducerError) in
            seen.withLock { $0.append(context.meta) }
            return action
        })
        let store = try Store(path: dir.path, definition: definition)
        try await store.dispatch(Self.set("/a", 1), meta: ActionMeta(source: "here"))
        try await store.dispatch(Self.set("/a", 2))
        #expect(seen.withLock { $0 } == [ActionMeta(source: "here"), nil])
        await store.close()
    }
}
