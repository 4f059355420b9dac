import ReelFraming
import ReelJSON
import ReelProtocol
@testable import ReelServer
import Synchronization
import Testing

/// Routing each line a connection reads, without a socket or a store.
struct RequestRouterTests {
    final class Ticket: Settling {
        private let settled = Mutex(false)
        var isSettled: Bool { settled.withLock { $0 } }
        func settle() { settled.withLock { $0 = true } }
    }

    func router(denying denied: Set<MethodName> = []) -> RequestRouter<Ticket> {
        RequestRouter { method in
            denied.contains(method.name) ? RPCError(code: RPCError.Code.permissionDenied, message: "no \(method.name)") : nil
        }
    }

    func route(_ router: inout RequestRouter<Ticket>, _ line: String) -> RequestRouter<Ticket>.Route {
        Array(line.utf8).withUnsafeBytes { router.route($0) }
    }

    func answer(_ route: RequestRouter<Ticket>.Route) throws -> JSONValue? {
        guard case .answer(let bytes) = route else { return nil }
        return try JSONValue(parsing: bytes)
    }

    @Test func whatCannotBeReadIsAnsweredAtOnce() throws {
        var router = router()
        #expect(try answer(route(&router, "{nope"))?["error"]?["code"] == -32700)
        #expect(try answer(route(&router, "{nope"))?["id"] == .null)
        let notification = try answer(route(&router, #"{"jsonrpc":"2.0","method":"get"}"#))
        #expect(notification?["error"]?["code"] == -32600)
        let unknown = try answer(route(&router, #"{"jsonrpc":"2.0","id":3,"method":"frobnicate"}"#))
        #expect(unknown?["error"]?["code"] == -32601)
        #expect(unknown?["id"] == 3)
        let badParams = try answer(route(&router, #"{"jsonrpc":"2.0","id":4,"method":"get","params":{"at":-1}}"#))
        #expect(badParams?["error"]?["code"] == -32602)
    }

    @Test func aMethodThePeerMayNotCallIsRefusedBeforeItRuns() throws {
        var router = router(denying: [Method.Dispatch.name])
        let refused = try answer(route(&router, #"{"jsonrpc":"2.0","id":"d","method":"dispatch","params":{"action":{"type":"set"}}}"#))
        #expect(refused?["error"]?["code"] == 1004)
        #expect(refused?["id"] == "d")
    }

    /// What the peer is known to be permitted is routed without asking; anything else is asked.
    @Test func permittedMethodsAreNotAskedAbout() throws {
        var router = RequestRouter<Ticket>(permitted: [.dispatch]) { method in
            RPCError(code: RPCError.Code.permissionDenied, message: "no \(method.name)")
        }
        let dispatch = #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/a","value":1}}}}"#
        guard case .dispatch = route(&router, dispatch) else {
            Issue.record("a permitted dispatch was not routed to the store")
            return
        }
        #expect(try answer(route(&router, #"{"jsonrpc":"2.0","id":2,"method":"get"}"#))?["error"]?["code"] == 1004)
    }

    @Test func eachMethodGoesWhereItIsAnswered() {
        var router = router()
        guard case .dispatch(let id, let params) = route(&router, #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"reset"}}}"#) else {
            Issue.record("a dispatch was not routed to the store")
            return
        }
        #expect(id == 1)
        #expect(params.actions.map(\.type) == ["reset"])
        guard case .subscribe(_, let subscribe, _) = route(&router, #"{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"path":"/a"}}"#) else {
            Issue.record("a subscribe was not routed to the connection")
            return
        }
        #expect(subscribe.path == (try? JSONPointer("/a")))
        guard case .unsubscribe(_, let unsubscribe) = route(&router, #"{"jsonrpc":"2.0","id":3,"method":"unsubscribe","params":{"subscription":"s1"}}"#) else {
            Issue.record("an unsubscribe was not routed to the connection")
            return
        }
        #expect(unsubscribe.subscription == "s1")
        guard case .call(_, let call, _) = route(&router, #"{"jsonrpc":"2.0","id":4,"method":"stats"}"#) else {
            Issue.record("stats was not routed to the handler")
            return
        }
        #expect(call.is(Method.Stats.self))
    }

    /// A connection reads its own writes: whatever follows a dispatch waits for it to settle.
    @Test func readsWaitForTheDispatchesReadBeforeThem() {
        var router = router()
        let dispatch = #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"reset"}}}"#
        let get = #"{"jsonrpc":"2.0","id":2,"method":"get"}"#
        let first = Ticket(), second = Ticket()
        _ = route(&router, dispatch)
        router.noteDispatched(first)
        _ = route(&router, dispatch)
        router.noteDispatched(second)
        guard case .call(_, _, let barrier) = route(&router, get) else { Issue.record("get not routed"); return }
        #expect(barrier.map { ObjectIdentifier($0) } == [ObjectIdentifier(first), ObjectIdentifier(second)])
        first.settle()
        guard case .subscribe(_, _, let next) = route(&router, #"{"jsonrpc":"2.0","id":3,"method":"subscribe"}"#) else {
            Issue.record("subscribe not routed")
            return
        }
        #expect(next.map { ObjectIdentifier($0) } == [ObjectIdentifier(second)], "a settled dispatch holds nothing up")
        second.settle()
        guard case .call(_, _, let none) = route(&router, get) else { Issue.record("get not routed"); return }
        #expect(none.isEmpty)
    }

    @Test func aFramingFailureIsTheLastAnswer() {
        #expect(String(decoding: RequestRouter<Ticket>.answer(to: .lineTooLong(limit: 10)), as: UTF8.self)
            == #"{"jsonrpc":"2.0","id":null,"error":{"code":1007,"message":"request line longer than the limit of 10 bytes; the connection is closed (split large batches)","data":{"limit":10}}}"# + "\n")
        #expect(String(decoding: RequestRouter<Ticket>.answer(to: .stalledMidLine(after: .seconds(30))), as: UTF8.self)
            == #"{"jsonrpc":"2.0","id":null,"error":{"code":1007,"message":"no newline after 30 s in the middle of a message; the connection is closed"}}"# + "\n")
    }
}
