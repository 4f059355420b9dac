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
        #expect(machine.fill(2, with: bytes("c")) == .none)
        #expect(machine.fill(1, with: bytes("b")) == .none)
        #expect(written(machine.takeReady()).isEmpty, "the first answer is not ready: nothing may overtake it")
        #expect(machine.fill(0, with: bytes("a")) == .scheduleEventLoopWrite)
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
        #expect(machine.add(first, limit: 2) == .added(registerWithFeed: false))
        #expect(machine.activeSubscriptions.isEmpty)
        _ = machine.fill(slot, with: bytes("subscribed"), activating: first)
        #expect(machine.activeSubscriptions.isEmpty, "filled is not written")
        _ = machine.takeReady()
        #expect(machine.activeSubscriptions.map(\.id) == ["s1"])

        // One unsubscribed before its answer is written never becomes active.
        guard case .slot(let next) = machine.reserve() else { Issue.record("no slot"); return }
        #expect(machine.add(second, limit: 2) == .added(registerWithFeed: false))
        #expect(machine.add(subscription("s3"), limit: 2) == .refused, "over the limit")
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
        _ = machine.endInput()
        #expect(!machine.takeReady().drained, "an answer is still owed")
        _ = machine.fill(0, with: bytes("last"))
        let ready = machine.takeReady()
        #expect(written(ready) == ["last"])
        #expect(ready.drained)
    }

    @Test func aStoppedOutputTakesNothingMore() {
        var machine = ConnectionStateMachine(maxInFlight: 1)
        _ = machine.reserve()
        _ = machine.stopOutput()
        #expect(machine.reserve() == .stopped)
        #expect(!machine.isFull, "a reader waiting for room must not wait for an output that stopped")
        #expect(machine.fill(0, with: bytes("late")) == .none)
        #expect(machine.add(subscription("s1"), limit: 2) == .refused)
    }

    // MARK: Who writes, and when

    @Test func theEventLoopIsAskedOnceForWhatBecameReady() {
        var machine = ConnectionStateMachine(maxInFlight: 8)
        for _ in 0..<3 { _ = machine.reserve() }
        #expect(machine.fill(1, with: bytes("b")) == .none, "the first answer owed is not ready")
        #expect(machine.fill(0, with: bytes("a")) == .scheduleEventLoopWrite)
        #expect(machine.fill(2, with: bytes("c")) == .none, "a write is on its way already")
        #expect(written(machine.takeReadyForEventLoop(socketWritable: true)) == ["a", "b", "c"])
        _ = machine.reserve()
        #expect(machine.fill(3, with: bytes("d")) == .scheduleEventLoopWrite, "the next ready answer asks again")
    }

    @Test func aFullSocketLeavesTheAnswersInTheirSlots() {
        var machine = ConnectionStateMachine(maxInFlight: 1)
        _ = machine.reserve()
        #expect(machine.fill(0, with: bytes("a")) == .scheduleEventLoopWrite)
        #expect(machine.takeReadyForEventLoop(socketWritable: false).slots.isEmpty)
        #expect(machine.reserve() == .full, "the unwritten answer holds its slot: reading stops")
        #expect(written(machine.takeReadyForEventLoop(socketWritable: true)) == ["a"], "written once the socket takes more")
    }

    @Test func theAnswersTakenGoIntoTheMemoryGiven() {
        var machine = ConnectionStateMachine(maxInFlight: 8)
        for index in 0..<3 {
            _ = machine.reserve()
            _ = machine.fill(index, with: bytes("\(index)"))
        }
        var storage: [ConnectionStateMachine.Slot] = []
        storage.reserveCapacity(8)
        let memory = storage.withUnsafeBufferPointer { $0.baseAddress }
        let ready = machine.takeReadyForEventLoop(socketWritable: true, reusing: &storage)
        #expect(written(ready) == ["0", "1", "2"])
        #expect(ready.slots.withUnsafeBufferPointer { $0.baseAddress } == memory, "no new array for the slots")
        #expect(storage.isEmpty, "the memory moved into the answer")
    }

    @Test func anAnswerThatClosesIsTheLastWritten() {
        var machine = ConnectionStateMachine(maxInFlight: 4, usesFeed: true)
        for _ in 0..<3 { _ = machine.reserve() }
        #expect(machine.writesUpdates)
        _ = machine.fill(1, with: bytes("bye"), closing: true)
        #expect(machine.writesUpdates, "updates go on until the closing answer is written")
        _ = machine.fill(0, with: bytes("a"))
        let ready = machine.takeReadyForEventLoop(socketWritable: true)
        #expect(written(ready) == ["a", "bye"] && ready.closesAfterWriting)
        #expect(!machine.writesUpdates, "no update after the closing answer")
        #expect(machine.fill(2, with: bytes("late")) == .none, "nothing is written after it")
        #expect(machine.takeReady().slots.isEmpty)
        #expect(machine.reserve() == .stopped, "nothing more is read")
    }

    @Test func theLastAnswersAfterTheInputEndedCloseTheConnection() {
        var machine = ConnectionStateMachine(maxInFlight: 4)
        _ = machine.reserve()
        let closesNow = machine.endInput()
        #expect(!closesNow, "an answer is owed: not yet")
        #expect(machine.fill(0, with: bytes("last")) == .scheduleEventLoopWrite)
        let ready = machine.takeReadyForEventLoop(socketWritable: true)
        #expect(written(ready) == ["last"] && ready.drained && ready.closesAfterWriting)
    }

    @Test func anInputThatEndsWithNothingOwedClosesAtOnceUnlessAWriteIsOnItsWay() {
        var idle = ConnectionStateMachine(maxInFlight: 4)
        _ = idle.reserve()
        _ = idle.fill(0, with: bytes("a"))
        _ = idle.takeReadyForEventLoop(socketWritable: true)
        let idleClosesNow = idle.endInput()
        #expect(idleClosesNow, "everything was written: close now")

        var writing = ConnectionStateMachine(maxInFlight: 4)
        _ = writing.reserve()
        #expect(writing.fill(0, with: bytes("a")) == .scheduleEventLoopWrite)
        let writingClosesNow = writing.endInput()
        #expect(!writingClosesNow, "the write on its way closes after it")
        #expect(writing.takeReadyForEventLoop(socketWritable: true).closesAfterWriting)
    }

    @Test func theIntakeWaitsForRoomAndIsToldOfItOrOfTheEnd() {
        var machine = ConnectionStateMachine(maxInFlight: 1)
        #expect(machine.reserveForIntake() == .slot(0))
        #expect(machine.reserveForIntake() == .full)
        _ = machine.fill(0, with: bytes("a"))
        #expect(machine.takeReadyForEventLoop(socketWritable: true).notifyIntake, "room came")
        #expect(machine.reserveForIntake() == .slot(1))
        #expect(machine.reserveForIntake() == .full)
        let stop = machine.stopOutput()
        #expect(stop.notifyIntake, "it hears that no room will come")
        #expect(machine.reserveForIntake() == .stopped)
    }

    @Test func theFeedHearsOfTheFirstSubscriptionAndOfTheEnd() {
        var machine = ConnectionStateMachine(maxInFlight: 4, usesFeed: true)
        #expect(machine.add(subscription("s1"), limit: 4) == .added(registerWithFeed: true))
        #expect(machine.add(subscription("s2"), limit: 4) == .added(registerWithFeed: false))
        let stop = machine.stopOutput()
        #expect(Set(stop.unwatch.map(\.id)) == ["s1", "s2"] && stop.unregisterFromFeed)
        #expect(machine.activeSubscriptions.isEmpty)
    }

    @Test func aClosingAnswerIsMarked() {
        var machine = ConnectionStateMachine(maxInFlight: 2)
        _ = machine.reserve()
        _ = machine.fill(0, with: bytes("bye"), closing: true)
        #expect(machine.takeReady().slots.map(\.closesConnection) == [true])
    }
}
