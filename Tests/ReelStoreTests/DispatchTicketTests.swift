import ReelCore
import ReelJSON
import ReelStore
import ReelTestSupport
import Synchronization
import Testing

/// The outcome of a submitted dispatch, by callback and by `await`.
@Suite(.timeLimit(.minutes(1)), .heavy) struct DispatchTicketTests {
    /// What callbacks heard: a seq, or the name of an error's code.
    final class Outcomes: Sendable {
        let seen = Mutex<[String]>([])
        func record(_ outcome: DispatchTicket.Outcome) {
            let heard = switch outcome {
            case .success(let result): "seq \(result.seq)"
            case .failure(let error): error.code.name
            }
            seen.withLock { $0.append(heard) }
        }
        var all: [String] { seen.withLock { $0 } }
    }

    @Test func aCallbackHearsTheOutcomeOnceBeforeOrAfterItIsKnown() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let early = Outcomes(), late = Outcomes()
        let ticket = store.submit(batch: [Action(type: "set", payload: ["path": "/a", "value": 1])])
        ticket.onSettled(early.record)  // most likely before the commit
        #expect(try await ticket.result().seq == 1)
        ticket.onSettled(late.record)  // known already: called at once, on this thread
        #expect(late.all == ["seq 1"])
        #expect(early.all == ["seq 1"])

        let refused = store.submit(batch: [Action(type: "frobnicate")])
        let heard = Outcomes()
        refused.onSettled(heard.record)
        await #expect(throws: StoreError.self) { try await refused.result() }
        #expect(heard.all == ["unknownActionType"])
        await store.close()

        let closed = store.submit(batch: [Action(type: "set", payload: ["path": "/b", "value": 2])])
        let afterClose = Outcomes()
        closed.onSettled(afterClose.record)
        #expect(afterClose.all == ["shuttingDown"])
    }
}
