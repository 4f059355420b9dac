import Foundation
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// Each subscription mode, `since`, cancellation and typed state streams, against a real server.
@Suite(.timeLimit(.minutes(1)), .heavy) struct SubscriptionTests {
    @Test func valueModeDeliversTheNewValueWithIncreasingSeqs() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                let subscription = try await client.subscribe(try JSONPointer("/n"), mode: .value)
                #expect(subscription.startSeq == 0)
                #expect(subscription.startValue == .null, "a slice that does not exist yet reads as null")

                try await client.dispatch(Stock.set("/n", 0))
                for _ in 1...9 { try await client.dispatch(Stock.increment()) }
                try await client.dispatch(Stock.set("/other", true))  // does not touch /n: no update

                let seen = try await withDeadline(.seconds(20), "the value 9") {
                    var seen: [SubscriptionUpdate] = []
                    for try await update in subscription {
                        seen.append(update)
                        if update.value == 9 { break }
                    }
                    return seen
                }
                let seqs = seen.map(\.seq)
                #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "seqs must strictly increase: \(seqs)")
                // Value mode may coalesce, but each value is the one at its seq: n = seq - 1.
                for update in seen {
                    #expect(update.value?.intValue == Int64(update.seq) - 1, "\(update)")
                }
                #expect(subscription.lastDeliveredSeq == 10)
                subscription.cancel()
                #expect(subscription.lastDeliveredSeq == 10, "an ended subscription still tells where it got to")
            }
        }
    }

    @Test func patchModePatchesRebuildTheSlice() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/todos", []))
                let todos = try JSONPointer("/todos")
                let subscription = try await client.subscribe(todos, mode: .patch)
                #expect(subscription.startSeq == 1)
                #expect(subscription.startValue == [])

                try await client.dispatch(Stock.append("/todos", ["title": "milk", "done": false]))
                try await client.dispatch(Stock.append("/todos", ["title": "eggs", "done": false]))
                try await client.dispatch(Stock.set("/todos/0/done", true))
                try await client.dispatch(Action(type: "remove", payload: ["path": "/todos/1"]))
                let final = try await client.get(todos)

                let rebuilt = try await withDeadline(.seconds(20), "seq \(final.seq)") {
                    var value = subscription.startValue ?? .null
                    for try await update in subscription {
                        let patch = try #require(update.patch)
                        try patch.apply(to: &value)
                        if update.seq == final.seq { break }
                    }
                    return value
                }
                #expect(rebuilt == final.value)
            }
        }
    }

    @Test func actionsModeDeliversEveryActionInOrderWithItsPeer() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                let subscription = try await client.subscribe(mode: .actions)
                #expect(subscription.startValue == nil)
                try await client.dispatch(Stock.set("/n", 0))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<3 {
                        group.addTask { for _ in 0..<10 { try await client.dispatch(Stock.increment()) } }
                    }
                    try await group.waitForAll()
                }
                let actions = try await withDeadline(.seconds(20), "31 actions") {
                    var actions: [ActionEnvelope] = []
                    for try await update in subscription {
                        let delivered = try #require(update.actions)
                        #expect(update.seq == delivered.last?.seq)
                        actions += delivered
                        if actions.count >= 31 { break }
                    }
                    return actions
                }
                #expect(actions.map(\.seq) == Array(1...31))
                #expect(actions.first?.action == Stock.set("/n", 0))
                #expect(actions.dropFirst().allSatisfy { $0.type == "increment" })
                #expect(actions.allSatisfy { $0.peer.pid == getpid() })
            }
        }
    }

    @Test func sharedSubscriptionsDeliverTheFeedToEveryClient() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { first throws in
                try await server.withClient { second throws in
                    let actions = try await first.subscribe(mode: .actions, shared: true)
                    let values = try await second.subscribe(try JSONPointer("/n"), mode: .value, shared: true)
                    let ownActions = try await second.subscribe(mode: .actions)
                    // One shared subscription per feed on a client.
                    let again = await clientError { () throws(ReelClientError) in _ = try await first.subscribe(mode: .actions, shared: true) }
                    #expect(again?.serverError?.code == -32602)

                    try await first.dispatch(Stock.set("/n", 0))
                    for _ in 1...9 { try await second.dispatch(Stock.increment()) }
                    for subscription in [actions, ownActions] {
                        let seqs = try await withDeadline(.seconds(20), "10 actions") {
                            var seqs: [UInt64] = []
                            for try await update in subscription {
                                seqs += try #require(update.actions).map(\.seq)
                                if seqs.count >= 10 { break }
                            }
                            return seqs
                        }
                        #expect(seqs == Array(1...10))
                    }
                    let last = try await withDeadline(.seconds(20), "the value 9") {
                        var last: SubscriptionUpdate?
                        for try await update in values {
                            last = update
                            if update.value == 9 { break }
                        }
                        return last
                    }
                    #expect(last?.seq == 10)
                }
            }
        }
    }

    @Test func sinceDeliversWhatWasMissedFirst() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/n", 0))
                for _ in 0..<4 { try await client.dispatch(Stock.increment()) }

                let actions = try await client.subscribe(mode: .actions, since: 2)
                #expect(actions.startSeq == 2)
                let missed = try await withDeadline(.seconds(20), "the missed actions") {
                    var seqs: [UInt64] = []
                    for try await update in actions {
                        seqs += update.actions?.map(\.seq) ?? []
                        if seqs.last == 5 { break }
                    }
                    return seqs
                }
                #expect(missed == [3, 4, 5])

                let value = try await client.subscribe(try JSONPointer("/n"), mode: .value, since: 2)
                #expect(value.startSeq == 2)
                #expect(value.startValue == 1)
                let first = try await withDeadline(.seconds(20), "the first update") {
                    var iterator = value.makeAsyncIterator()
                    return try await iterator.next()
                }
                #expect(first == SubscriptionUpdate(seq: 5, change: .value(4)))

                let future = await clientError { () throws(ReelClientError) in try await client.subscribe(mode: .actions, since: 99) }
                #expect(future?.rpcCode == RPCError.Code.seqOutOfRange)
            }
        }
    }

    @Test func cancelUnsubscribesAndEndsTheSequence() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                // The daemon holds at most 64 subscriptions per connection: 100 in a row only
                // fit if each cancel really unsubscribes.
                for _ in 0..<100 {
                    let subscription = try await client.subscribe(mode: .actions)
                    subscription.cancel()
                    // Fails (rather than hangs) if the cancelled sequence does not end.
                    try await withDeadline(.seconds(10), "the cancelled subscription to end") {
                        for try await _ in subscription {}
                    }
                }
                // Cancelling twice, or after the fact, is harmless; the connection still works.
                let last = try await client.subscribe()
                last.cancel()
                last.cancel()
                #expect(try await client.dispatch(Stock.set("/n", 1)).seq == 1)
            }
        }
    }

    @Test func typedStateStreamsStartWithTheCurrentValue() async throws {
        try await ServerHarness.run { server in
            try await server.withClient { client throws in
                try await client.dispatch(Stock.set("/counter", ["n": 0]))
                let counter = try JSONPointer("/counter")
                let patched = try await client.states(Counter.self, path: counter, mode: .patch)
                let whole = try await client.states(Counter.self, path: counter, mode: .value)
                for _ in 0..<5 { try await client.dispatch(Increment(path: "/counter/n", by: 1)) }

                for stream in [patched, whole] {
                    let states = try await withDeadline(.seconds(20), "n = 5") {
                        var states: [Snapshot<Counter>] = []
                        for try await state in stream {
                            states.append(state)
                            if state.value.n == 5 { break }
                        }
                        return states
                    }
                    #expect(states.first == Snapshot(seq: 1, value: Counter(n: 0)))
                    #expect(states.last == Snapshot(seq: 6, value: Counter(n: 5)))
                    #expect(states.allSatisfy { UInt64($0.value.n) + 1 == $0.seq })
                    stream.subscription.cancel()
                }

                let mistyped = try await client.states(Counter.self, path: try JSONPointer("/counter/n"))
                let error = try await withDeadline(.seconds(20), "the decoding error") { () async -> ReelClientError? in
                    var iterator = mistyped.makeAsyncIterator()
                    return await clientError { () throws(ReelClientError) in try await iterator.next() }
                }
                #expect(error?.code == .decodingFailed)
            }
        }
    }
}
