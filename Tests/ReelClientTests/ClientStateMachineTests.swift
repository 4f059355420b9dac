@testable import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// The client's rules for drops, resends and resumption, checked on the state machine alone.
@Suite(.timeLimit(.minutes(1))) struct ClientStateMachineTests {
    typealias Machine = ClientStateMachine

    static let hello = ServerHello(
        server: "reeld", version: "test", protocolVersion: 1, seq: 0, reducer: ReducerIdentity(name: "reel.json", version: "1"),
        capabilities: [])

    /// A machine whose connection `generation` is up and greeted.
    static func connected(_ machine: inout Machine) -> UInt64 {
        let generation = machine.makeGeneration()
        let opened = machine.connectionOpened(generation: generation)
        let greeted = machine.handshakeSucceeded(generation: generation, hello: hello)
        #expect(opened && greeted != nil)
        return generation
    }

    /// Submits an app request; returns its id and what the machine asked for.
    static func submit(
        _ machine: inout Machine, _ method: String, params: JSONValue = [:], kind: Machine.RequestKind = .call,
        policy: ResendPolicy = .resendAfterReconnect, cancelled: Bool = false
    ) -> (id: Int64, outputs: [Machine.Output]) {
        let id = machine.makeRequestID()
        let line = RPCRequest(id: .int(id), method: method, params: params).encodedLine()
        return (id, machine.submit(id: id, method: method, line: line, kind: kind, policy: policy, isCancelled: cancelled))
    }

    /// The requests written by `outputs`, parsed.
    static func written(_ outputs: [Machine.Output]) throws -> [JSONValue] {
        var requests: [JSONValue] = []
        for case .write(_, let lines) in outputs {
            for line in lines { requests.append(try JSONValue(parsing: line)) }
        }
        return requests
    }

    static func answers(_ outputs: [Machine.Output]) -> [Int64: Result<JSONValue, ReelClientError>] {
        var answers: [Int64: Result<JSONValue, ReelClientError>] = [:]
        for case .answer(let id, let result) in outputs { answers[id] = result }
        return answers
    }

    @Test func requestsWaitWhileDisconnectedThenFollowTheHandshakeInOrder() throws {
        var machine = Machine()
        let first = Self.submit(&machine, "get")
        let second = Self.submit(&machine, "dispatch", policy: .failIfConnectionLost)
        #expect(first.outputs.isEmpty && second.outputs.isEmpty, "nothing is written without a connection")

        let generation = machine.makeGeneration()
        let opened = machine.connectionOpened(generation: generation)
        #expect(opened)
        let third = Self.submit(&machine, "stats")
        #expect(third.outputs.isEmpty, "nothing but the hello goes out during the handshake")
        let helloID = machine.makeRequestID()
        let helloLine = RPCRequest(id: .int(helloID), method: "hello").encodedLine()
        let greeting = machine.submit(
            id: helloID, method: "hello", line: helloLine, kind: .handshake(generation: generation), policy: .failIfConnectionLost,
            isCancelled: false)
        #expect(try Self.written(greeting).map { $0["method"] } == ["hello"])

        let greeted = machine.handshakeSucceeded(generation: generation, hello: Self.hello)
        let flushed = try #require(greeted)
        #expect(try Self.written(flushed).map { $0["method"] } == ["get", "dispatch", "stats"])
        #expect(try Self.written(flushed).map { $0["id"] } == [.int(first.id), .int(second.id), .int(third.id)])
        #expect(machine.phase == .ready(generation: generation))
    }

    @Test func aDropFailsWhatIsUnsafeToRepeatAndKeepsTheRestForTheNextConnection() throws {
        var machine = Machine()
        let generation = Self.connected(&machine)
        let read = Self.submit(&machine, "get")
        let keyed = Self.submit(&machine, "dispatch", policy: .resendAfterReconnect)
        let unkeyed = Self.submit(&machine, "dispatch", policy: .failIfConnectionLost)
        #expect(try Self.written(read.outputs + keyed.outputs + unkeyed.outputs).count == 3)

        machine.noteProblem("the daemon sent error 1007: too long", generation: generation)
        let dropped = machine.connectionLost(generation: generation, reason: "closed")
        let answers = Self.answers(dropped)
        #expect(answers.keys.sorted() == [unkeyed.id])
        guard case .failure(let error)? = answers[unkeyed.id] else {
            Issue.record("the unkeyed dispatch was not failed")
            return
        }
        #expect(error.code == .connectionLost)
        #expect(error.message.contains("error 1007: too long"), "the noted reason explains the drop")
        let again = machine.connectionLost(generation: generation, reason: "again")
        #expect(again.isEmpty, "a second report changes nothing")

        let next = Self.connected(&machine)
        #expect(next != generation)
        #expect(machine.requests.values.filter { $0.sentOn == next }.count == 2, "the read and the keyed dispatch went out again")
    }

    /// A line over the daemon's limit is refused (1007 with a `null` id, then the connection
    /// closes): the request whose line it was gets the refusal, not "outcome unknown".
    @Test func aLineOverTheDaemonsLimitIsThatRequestsRefusal() throws {
        var machine = Machine()
        let generation = Self.connected(&machine)
        let small = Self.submit(&machine, "dispatch", params: ["n": 1], policy: .failIfConnectionLost)
        let large = Self.submit(&machine, "dispatch", params: ["text": .string(String(repeating: "x", count: 300))], policy: .failIfConnectionLost)
        let refusal = RPCError.lineTooLong(limit: 200)
        machine.noteLineRefused(refusal, generation: generation)
        let answers = Self.answers(machine.connectionLost(generation: generation, reason: "closed"))
        guard case .failure(let refused)? = answers[large.id] else {
            Issue.record("the oversized dispatch was not answered: \(answers)")
            return
        }
        #expect(refused.code == .serverError)
        #expect(refused.rpcCode == RPCError.Code.tooLarge)
        #expect(refused.serverError?.data?["limit"] == 200)
        #expect(refused.message.contains("over the daemon's limit of 200 bytes per request line; nothing was carried out"), "\(refused.message)")
        // The one before it was read and may have been carried out: as for any drop.
        guard case .failure(let lost)? = answers[small.id] else {
            Issue.record("the small dispatch was not failed")
            return
        }
        #expect(lost.code == .connectionLost)
    }

    @Test func aSubscriptionResumesFromItsLastDeliveredSeqAndIgnoresTheOldConnection() throws {
        var machine = Machine()
        let generation = Self.connected(&machine)
        let local = machine.openSubscription(path: .root, mode: .actions)
        let subscribe = Self.submit(&machine, "subscribe", kind: .subscribe(local))

        // The answer registers the daemon's id, so the update right behind it is delivered.
        let answer = RPCResponse(id: .int(subscribe.id), result: ["subscription": "s1", "seq": 4])
        let answered = machine.received(answer, generation: generation)
        #expect(Self.answers(answered).count == 1)
        let update: JSONValue = [
            "subscription": "s1", "seq": 5,
            "actions": [["seq": 5, "type": "x", "payload": nil, "time": "2026-01-01T00:00:00.000000000Z", "peer": ["uid": 1, "gid": 1, "pid": 1]]],
        ]
        let delivered = machine.receivedUpdate(update, generation: generation)
        guard case .deliver(let target, let change)? = delivered.first else {
            Issue.record("the update was not delivered: \(delivered)")
            return
        }
        #expect(target == local)
        #expect(change.seq == 5)
        #expect(machine.lastDeliveredSeq(of: local) == 5)

        _ = machine.connectionLost(generation: generation, reason: "closed")
        let stale = machine.receivedUpdate(update, generation: generation)
        #expect(stale.isEmpty, "nothing more from a dead connection")
        let next = machine.makeGeneration()
        let reopened = machine.connectionOpened(generation: next)
        #expect(reopened)
        let greeted = machine.handshakeSucceeded(generation: next, hello: Self.hello)
        let resumed = try #require(greeted)
        let resubscribe = try #require(try Self.written(resumed).first)
        #expect(resubscribe["method"] == "subscribe")
        #expect(resubscribe["params"] == ["since": 5, "mode": "actions"])
    }

    @Test func aSharedSubscriptionTakesTheUpdatesOfItsFeedAndResumesShared() throws {
        var machine = Machine()
        let generation = Self.connected(&machine)
        let local = machine.openSubscription(path: .root, mode: .actions, shared: true)
        let subscribe = Self.submit(&machine, "subscribe", kind: .subscribe(local))
        let answer = RPCResponse(id: .int(subscribe.id), result: ["subscription": "s1", "seq": 4, "feed": "actions"])
        let answered = machine.received(answer, generation: generation)
        #expect(Self.answers(answered).count == 1)
        let update: JSONValue = [
            "feed": "actions", "seq": 5,
            "actions": [["seq": 5, "type": "x", "payload": nil, "time": "2026-01-01T00:00:00.000000000Z", "peer": ["uid": 1, "gid": 1, "pid": 1]]],
        ]
        let delivered = machine.receivedUpdate(update, generation: generation)
        guard case .deliver(let target, let change)? = delivered.first else {
            Issue.record("the feed's update was not delivered")
            return
        }
        #expect(target == local && change.seq == 5)
        let otherFeed = machine.receivedUpdate(["feed": "value:/n", "seq": 6, "value": 1], generation: generation)
        #expect(otherFeed.isEmpty, "another feed")

        _ = machine.connectionLost(generation: generation, reason: "closed")
        let next = machine.makeGeneration()
        let reopened = machine.connectionOpened(generation: next)
        #expect(reopened)
        let greeted = machine.handshakeSucceeded(generation: next, hello: Self.hello)
        let resumed = try #require(greeted)
        let resubscribe = try #require(try Self.written(resumed).first)
        #expect(resubscribe["params"] == ["since": 5, "mode": "actions", "shared": true])
    }

    @Test func cancellingBeforeSendingFailsAtOnceAndAfterSendingWaitsForTheAnswer() throws {
        var machine = Machine()
        let waiting = Self.submit(&machine, "get")
        let cancelled = machine.cancelRequest(id: waiting.id)
        guard case .failure(let error)? = Self.answers(cancelled)[waiting.id] else {
            Issue.record("a request not yet sent was not failed at once")
            return
        }
        #expect(error.code == .cancelled)

        let generation = Self.connected(&machine)
        let sent = Self.submit(&machine, "dispatch", policy: .resendAfterReconnect)
        let afterCancel = machine.cancelRequest(id: sent.id)
        #expect(afterCancel.isEmpty, "a dispatch on the wire keeps waiting: its outcome matters")
        let answer = RPCResponse(id: .int(sent.id), result: ["seq": 1])
        let answered = machine.received(answer, generation: generation)
        #expect(try Self.answers(answered)[sent.id]?.get() == ["seq": 1])

        let alreadyCancelled = Self.submit(&machine, "get", cancelled: true)
        #expect(Self.answers(alreadyCancelled.outputs).keys.sorted() == [alreadyCancelled.id])
    }

    @Test func closeAnswersEveryCallerAndFinishesEverySubscription() throws {
        var machine = Machine()
        _ = Self.connected(&machine)
        let local = machine.openSubscription(path: .root, mode: .value)
        let subscribe = Self.submit(&machine, "subscribe", kind: .subscribe(local))
        let read = Self.submit(&machine, "get")
        let outputs = machine.close(reason: nil)
        #expect(Self.answers(outputs).keys.sorted() == [subscribe.id, read.id].sorted())
        #expect(outputs.contains { if case .finish(local, nil) = $0 { true } else { false } })
        #expect(machine.phase == .closed)
        let late = Self.submit(&machine, "get")
        guard case .failure(let error)? = Self.answers(late.outputs)[late.id] else {
            Issue.record("a request after close was not refused")
            return
        }
        #expect(error.code == .closed)
    }
}
