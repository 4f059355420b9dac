import NIOPosix
import ReelCore
import ReelJSON
import ReelProtocol
import ReelServer
import ReelStore
import ReelTestSupport
import Testing

/// Every stateless method of the protocol against a real store, as the server will call it.
@Suite(.timeLimit(.minutes(1)), .heavy) struct MethodHandlerTests {
    static let me = Peer(uid: 1000, gid: 1000, pid: 42)

    /// Runs `body` with a handler over a fresh stock store; peers with uid 666 may only read.
    func withHandler(_ body: (MethodHandler<JSONValue>) async throws -> Void) async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let handler = MethodHandler(store: store, queryPool: pool, serverVersion: "test") { permission, peer in
            peer.uid != 666 || permission == .read
        }
        do {
            try await body(handler)
        } catch {
            Issue.record("\(error)")
        }
        await store.close()
        try await pool.shutdownGracefully()
    }

    func call(_ handler: MethodHandler<JSONValue>, _ method: String, _ params: JSONValue?, peer: Peer = me) async throws -> Result<JSONValue, RPCError> {
        await handler.handle(try RPCCall(method: method, params: params), peer: peer)
    }

    func result(_ handler: MethodHandler<JSONValue>, _ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        try await call(handler, method, params).get()
    }

    func error(_ handler: MethodHandler<JSONValue>, _ method: String, _ params: JSONValue?, peer: Peer = me) async throws -> RPCError? {
        if case .failure(let error) = try await call(handler, method, params, peer: peer) { return error }
        Issue.record("\(method) \(params ?? .null) succeeded")
        return nil
    }

    @Test func helloDescribesTheServer() async throws {
        try await withHandler { handler throws in
            let hello = try await result(handler, "hello", ["client": "test"])
            #expect(hello["server"] == "reeld")
            #expect(hello["protocol"] == 1)
            #expect(hello["seq"] == 0)
            #expect(hello["reducer"] == ["name": "reel.json", "version": "1"])
            #expect(hello["capabilities"]?.arrayValue?.contains("dispatch.batch") == true)
        }
    }

    /// The one list of methods: each is answered by a connection or the query layer, so a server
    /// starts; `describe` through the handler as any read.
    @Test func everyMethodIsAnsweredAndDescribeTellsTheActionTypes() async throws {
        #expect(MethodHandler<JSONValue>.unansweredMethods.isEmpty)
        try await withHandler { handler throws in
            let described = try await result(handler, "describe")
            #expect(described["reducer"] == ["name": "reel.json", "version": "1"])
            #expect(described["actions"]?.arrayValue?.map { $0["type"] } == ["append", "increment", "merge", "patch", "remove", "set", "@revert"])
            #expect(throws: RPCError.self) { try RPCCall(method: "describe", params: ["verbose": true]) }
            let hello = try await result(handler, "hello")
            #expect(hello["capabilities"]?.arrayValue?.contains("describe") == true)
        }
    }

    @Test func dispatchSingleBatchAndDuplicate() async throws {
        try await withHandler { handler throws in
            #expect(try await result(handler, "dispatch", Params.set("/a", 1)) == ["seq": 1])
            let batch: JSONValue = ["actions": [
                ["type": "increment", "payload": ["path": "/a"]], ["type": "set", "payload": ["path": "/b", "value": true]],
            ], "idempotencyKey": "k"]
            #expect(try await result(handler, "dispatch", batch) == ["seqs": [2, 3]])
            #expect(try await result(handler, "dispatch", batch) == ["seqs": [2, 3], "duplicate": true])
            #expect(try await result(handler, "get") == ["seq": 3, "value": ["a": 2, "b": true]])
        }
    }

    @Test func dispatchErrorsCarryTheirCodes() async throws {
        try await withHandler { handler throws in
            _ = try await result(handler, "dispatch", Params.set("/a", 1))
            let stale = try await error(handler, "dispatch", ["action": ["type": "set", "payload": ["path": "/a", "value": 2]], "expectedSeq": 0])
            #expect(stale?.code == 1003)
            #expect(stale?.data == ["seq": 1])
            #expect(try await error(handler, "dispatch", ["action": ["type": "frobnicate"]])?.code == 1002)
            #expect(try await error(handler, "dispatch", ["action": ["type": "remove", "payload": ["path": "/zz"]]])?.code == 1001)
            let badBatch: JSONValue = ["actions": [["type": "set", "payload": ["path": "/x", "value": 1]], ["type": "remove", "payload": ["path": "/zz"]]]]
            #expect(try await error(handler, "dispatch", badBatch)?.code == 1001)
            #expect(try await result(handler, "get") == ["seq": 1, "value": ["a": 1]])
        }
    }

    @Test func timeTravelMethods() async throws {
        try await withHandler { handler throws in
            _ = try await result(handler, "dispatch", Params.set("/hp", 10))
            _ = try await result(handler, "dispatch", Params.set("/hp", 4))
            _ = try await result(handler, "dispatch", Params.set("/name", "x"))
            #expect(try await result(handler, "get", ["path": "/hp", "at": 1]) == ["seq": 1, "value": 10])
            #expect(try await error(handler, "get", ["path": "/name", "at": 2])?.code == 1005)
            #expect(try await error(handler, "get", ["at": 9])?.code == 1006)
            #expect(try await result(handler, "diff", ["from": 1, "to": 2]) == ["patch": [["op": "replace", "path": "/hp", "value": 4]]])
            #expect(try await result(handler, "replay", ["skip": [2]]) == ["value": ["hp": 10, "name": "x"]])
            let history = try await result(handler, "history", ["from": 2, "limit": 1])
            #expect(history["actions"]?.arrayValue?.first?["seq"] == 2)
            #expect(history["actions"]?.arrayValue?.first?["peer"] == ["uid": 1000, "gid": 1000, "pid": 42])
            #expect(history["next"] == 3)
        }
    }

    @Test func thePolicyIsEnforcedPerMethod() async throws {
        try await withHandler { handler throws in
            let reader = Peer(uid: 666, gid: 666, pid: 1)
            #expect(try await error(handler, "dispatch", Params.set("/a", 1), peer: reader)?.code == 1004)
            #expect(try await error(handler, "stats", nil, peer: reader)?.code == 1004)
            #expect(try await call(handler, "get", nil, peer: reader) == .success(["seq": 0, "value": [:]]))
            let stats = try await result(handler, "stats")
            #expect(stats["seq"] == 0)
            #expect(stats["commits"] == 0)
        }
    }

    @Test func aClosingStoreAnswers1009() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: .stock)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let handler = MethodHandler(store: store, queryPool: pool, serverVersion: "test") { _, _ in true }
        await store.close()
        let refused = try await handler.handle(RPCCall(method: "dispatch", params: Params.set("/a", 1)), peer: Self.me)
        #expect(refused == .failure(RPCError(code: 1009, message: "the store is shutting down")))
        try await pool.shutdownGracefully()
        let noPool = try await handler.handle(RPCCall(method: "history", params: nil), peer: Self.me)
        #expect((try? noPool.get()) == nil)
        if case .failure(let error) = noPool { #expect(error.code == 1009) }
    }
}
