import ReelJSON
@testable import ReelServer
import Testing

/// The rules of a connection's output, without a socket.
struct ConnectionStateMachineTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func written(_ ready: ConnectionStateMachine.Ready) -> [String] {
        ready.slots.map { String(decoding: $0.bytes ?? [], as: UTF8.self) }
    }

    func subscription(_ id: String) -> Subscription {
        Subscription(id: id, path: .root, mode: .value, seq: 0, value: .null)
    }

    @Test func answersGoOutInRequestOrderHoweverTheyFinish() {
        var machine = ConnectionStateMachine(maxInFlight: 8)
        #expect(machine.reserve() == .slot(0))
        #expect(machine.reserve() == .slot(1))
        #expect(machine.reserve() == .slot(2))
        #expect(machine.fill(2, with: bytes("c")) == true)
        #expect(machine.fill(1, with: bytes("b")) == true)
        #expect(written(machine.takeReady()).isEmpty, "the first answer is not ready: nothing may overtake it")
        #expect(machine.fill(0, with: bytes("a")) == true)
        #expect(written(machine.takeReady()) == ["a", "b", "c"])
        #expect(machine.reserve() == .slot(3))
    }

    @Test func aFullConnectionReadsNoMoreUntilAnAnswerIsWritten() {
        var machine = ConnectionStateMachine(maxInFlight: 2)
        #expect(machine.reserve() == .slot(0))
        #expect(machine.reserve() == .slot(1))
        #expect(machine.reserve() == .full)
        #expect(machine.isFull)
        _ = machine.fill(1, with: bytes("b"))
        #expect(!machine.takeReady().freedRoom, "an answer behind an unfinished one frees nothing")
        #expect(machine.reserve() == .full)
        _ = machine.fill(0, with: bytes("a"))
        #expect(machine.takeReady().freedRoom)
        #expect(machine.reserve() == .slot(2))
    }

    @Test func aSubscriptionIsActiveOnlyOnceItsAnswerIsWritten() {
        var machine = ConnectionStateMachine(maxInFlight: 8)
        let first = subscription("s1"), second = subscription("s2")
        guard case .slot(let slot) = machine.reserve() else { Issue.record("no slot"); return }
        #expect(machine.add(first, limit: 2) == true)
        #expect(machine.activeSubscriptions.isEmpty)
        _ = machine.fill(slot, with: bytes("subscribed"), activating: first)
        #expect(machine.activeSubscriptions.isEmpty, "filled is not written")
        _ = machine.takeReady()
        #expect(machine.activeSubscriptions.map(\.id) == ["s1"])

        // One unsubscribed before its answer is written never becomes active.
        guard case .slot(let next) = machine.reserve() else { Issue.record("no slot"); return }
        #expect(machine.add(second, limit: 2) == true)
        #expect(machine.add(subscription("s3"), limit: 2) == false, "over the limit")
        #expect(machine.remove(subscription: "s2") != nil)
        _ = machine.fill(next, with: bytes("subscribed"), activating: second)
        _ = machine.takeReady()
        #expect(machine.activeSubscriptions.map(\.id) == ["s1"])
        #expect(machine.remove(subscription: "s1") != nil)
        #expect(machine.remove(subscription: "s1") == nil)
        #expect(machine.activeSubscriptions.isEmpty)
    }

    @Test func theConnectionIsDoneOnceTheInputEndedAndEveryAnswerIsWritten() {
        var machine = ConnectionStateMachine(maxInFlight: 8)
        _ = machine.reserve()
        machine.endInput()
        #expect(!machine.takeReady().drained, "an answer is still owed")
        _ = machine.fill(0, with: bytes("last"))
        let ready = machine.takeReady()
        #expect(written(ready) == ["last"])
        #expect(ready.drained)
    }

    @Test func aStoppedWriterTakesNothingMore() {
        var machine = ConnectionStateMachine(maxInFlight: 1)
        _ = machine.reserve()
        machine.stopWriting()
        #expect(machine.reserve() == .stopped)
        #expect(!machine.isFull, "a reader waiting for room must not wait for a writer that stopped")
        #expect(machine.fill(0, with: bytes("late")) == false)
    }

    @Test func aClosingAnswerIsMarked() {
        var machine = ConnectionStateMachine(maxInFlight: 2)
        _ = machine.reserve()
        _ = machine.fill(0, with: bytes("bye"), closing: true)
        #expect(machine.takeReady().slots.map(\.closesConnection) == [true])
    }
}
