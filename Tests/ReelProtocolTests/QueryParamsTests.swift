import ReelJSON
import ReelProtocol
import Testing

/// The params of every method but `dispatch`: defaults, every refusal, and client round trips.
struct QueryParamsTests {
    // MARK: hello, stats

    @Test func helloDefaultsAndValues() throws {
        #expect(try HelloParams(params: nil) == HelloParams())
        #expect(try HelloParams(params: ["client": "reel 0.1", "protocol": 1]) == HelloParams(client: "reel 0.1", protocolVersion: 1))
    }

    @Test func helloRefusesAnotherProtocolVersionAndSaysWhichOneIsSpoken() {
        let error = #expect(throws: RPCError.self) { try HelloParams(params: ["protocol": 2]) }
        #expect(error == RPCError(
            code: -32602, message: "protocol version 2 is not supported; this server speaks protocol 1",
            data: ["supported": [1]]))
        #expect(invalidParams(["protocol": "1"], HelloParams.init(params:))
            == #"params.protocol must be an integer protocol version, not the string "1""#)
        #expect(invalidParams(["protocol": 1.5], HelloParams.init(params:))
            == "params.protocol must be an integer protocol version, not 1.5")
    }

    @Test func helloRefusesWrongTypesAndUnknownMembers() {
        #expect(invalidParams(["client": 3], HelloParams.init(params:)) == "params.client must be a string, not 3")
        #expect(invalidParams(["version": 1], HelloParams.init(params:))
            == #"hello has no param "version" (it takes client, protocol)"#)
    }

    @Test func statsTakesNothing() throws {
        #expect(try StatsParams(params: nil) == StatsParams())
        #expect(try StatsParams(params: [:]) == StatsParams())
        #expect(invalidParams(["verbose": true], StatsParams.init(params:))
            == #"stats has no param "verbose" (it takes no params)"#)
        #expect(invalidParams([], StatsParams.init(params:))
            == "stats takes named params (an object), not an array; positional params are not supported")
    }

    // MARK: get

    @Test func getDefaultsToTheWholeLatestState() throws {
        #expect(try GetParams(params: nil) == GetParams(path: .root, at: nil))
        #expect(try GetParams(params: ["path": "", "at": nil]) == GetParams())
        // `RPCRequest` never passes a `null` params on, but a direct caller may: it means none.
        #expect(try GetParams(params: .null) == GetParams())
    }

    @Test func getReadsPathAndSeq() throws {
        let params = try GetParams(params: ["path": "/a~1b/0", "at": 12])
        #expect(params.path.tokens == ["a/b", "0"])
        #expect(params.at == 12)
        #expect(try GetParams(params: ["at": 0]).at == 0)
    }

    @Test func pathsMustBeJSONPointers() {
        #expect(invalidParams(["path": "a/b"], GetParams.init(params:))
            == #"params.path is not a valid JSON Pointer (RFC 6901): JSON Pointer "a/b" must be empty or start with '/'"#)
        #expect(invalidParams(["path": "/a~2"], GetParams.init(params:))
            == #"params.path is not a valid JSON Pointer (RFC 6901): JSON Pointer "/a~2" has an invalid escape: '~' must be followed by '0' or '1'"#)
        #expect(invalidParams(["path": ["a"]], GetParams.init(params:))
            == #"params.path must be a JSON Pointer string (RFC 6901) such as "" or "/todos/0", not an array"#)
    }

    @Test(arguments: [(-3, "-3"), (0.5, "0.5"), ("7", #"the string "7""#), (false, "false")] as [(JSONValue, String)])
    func getAtMustBeASeq(value: JSONValue, described: String) {
        #expect(invalidParams(["at": value], GetParams.init(params:))
            == "params.at must be a non-negative integer (a seq), not \(described)")
    }

    // MARK: subscribe, unsubscribe

    @Test func subscribeDefaultsAndModes() throws {
        #expect(try SubscribeParams(params: nil) == SubscribeParams(path: .root, since: nil, mode: .value))
        for mode in SubscriptionMode.allCases {
            #expect(try SubscribeParams(params: ["mode": .string(mode.rawValue)]).mode == mode)
        }
        let params = try SubscribeParams(params: ["path": "/todos", "since": 40, "mode": "patch"])
        #expect(params == SubscribeParams(path: JSONPointer(tokens: ["todos"]), since: 40, mode: .patch))
        let shared = try SubscribeParams(params: ["path": "/todos", "mode": "patch", "shared": true])
        #expect(shared.shared && shared.feed == "patch:/todos")
        #expect(try SubscribeParams(params: shared.jsonValue) == shared)
        #expect(try SubscribeParams(params: ["mode": "actions", "path": "/x", "shared": true]).feed == "actions")
        #expect(try SubscribeParams(params: ["shared": false]).shared == false)
    }

    @Test func subscribeRefusals() {
        let read = SubscribeParams.init(params:)
        #expect(invalidParams(["mode": "values"], read) == #"params.mode must be "value", "patch" or "actions", not the string "values""#)
        #expect(invalidParams(["mode": 1], read) == #"params.mode must be "value", "patch" or "actions", not 1"#)
        #expect(invalidParams(["since": -1], read) == "params.since must be a non-negative integer (a seq), not -1")
        #expect(invalidParams(["path": 0], read)
            == #"params.path must be a JSON Pointer string (RFC 6901) such as "" or "/todos/0", not 0"#)
        #expect(invalidParams(["at": 3], read) == #"subscribe has no param "at" (it takes path, since, mode, branch, shared)"#)
        #expect(invalidParams(["shared": "yes"], read) == #"params.shared must be true or false, not the string "yes""#)
        #expect(invalidParams(["shared": true, "branch": "b"], read)?.hasPrefix("params.shared follows the main history's feeds") == true)
    }

    @Test func unsubscribeNeedsTheSubscriptionID() throws {
        let read = UnsubscribeParams.init(params:)
        #expect(try UnsubscribeParams(params: ["subscription": "s1"]).subscription == "s1")
        #expect(invalidParams(nil, read) == "unsubscribe needs params.subscription, the id that subscribe returned")
        #expect(invalidParams(["subscription": nil], read) == "unsubscribe needs params.subscription, the id that subscribe returned")
        #expect(invalidParams(["subscription": 1], read) == "params.subscription must be a string, not 1")
        #expect(invalidParams(["subscription": ""], read) == "params.subscription must not be empty; pass the id that subscribe returned")
    }

    // MARK: history

    @Test func historyDefaults() throws {
        let params = try HistoryParams(params: nil)
        #expect(params == HistoryParams(from: 1, to: nil, limit: 100, types: nil))
    }

    @Test func historyReadsEverything() throws {
        let params = try HistoryParams(params: ["from": 0, "to": 0, "limit": 10_000, "types": ["set", "merge", "set"]])
        #expect(params == HistoryParams(from: 0, to: 0, limit: 10_000, types: ["set", "merge"]))
        #expect(try HistoryParams(params: ["limit": 1]).limit == 1)
        #expect(try HistoryParams(params: ["from": 5, "to": 5]).from == 5)
        #expect(try HistoryParams(params: ["from": nil, "to": 4]) == HistoryParams(from: 1, to: 4))
        #expect(try HistoryParams(params: ["order": "desc"]).newestFirst)
        #expect(try !HistoryParams(params: ["order": "asc"]).newestFirst)
        #expect(try HistoryParams(params: ["changed": "/a~1b/0"]).changed == JSONPointer(tokens: ["a/b", "0"]))
        #expect(try HistoryParams(params: ["changed": ""]).changed == .root)
        #expect(try HistoryParams(params: nil).changed == nil)
        let changed = HistoryParams(changed: try JSONPointer("/x"))
        #expect(try HistoryParams(params: changed.jsonValue) == changed)
    }

    @Test func blameParams() throws {
        #expect(try BlameParams(params: nil) == BlameParams())
        let all = try BlameParams(params: ["path": "/cart", "at": 5, "limit": 10, "after": "/cart/a"])
        #expect(all == BlameParams(path: try JSONPointer("/cart"), at: 5, limit: 10, after: try JSONPointer("/cart/a")))
        #expect(try BlameParams(params: all.jsonValue) == all)
        #expect(invalidParams(["path": "cart"], BlameParams.init(params:))?.contains("params.path") == true)
        #expect(invalidParams(["limit": 0], BlameParams.init(params:)) == "params.limit must be an integer from 1 to 10000, not 0")
        #expect(invalidParams(["at": -1], BlameParams.init(params:)) == "params.at must be a non-negative integer (a seq), not -1")
    }

    @Test(arguments: [(0, "0"), (10_001, "10001"), (-1, "-1"), (2.5, "2.5"), ("10", #"the string "10""#)] as [(JSONValue, String)])
    func historyLimitIsBounded(value: JSONValue, described: String) {
        #expect(invalidParams(["limit": value], HistoryParams.init(params:))
            == "params.limit must be an integer from 1 to 10000, not \(described)")
    }

    @Test func historyRefusals() {
        let read = HistoryParams.init(params:)
        #expect(invalidParams(["from": 5, "to": 4], read) == "params.from (5) must not be greater than params.to (4)")
        #expect(invalidParams(["to": "4"], read) == #"params.to must be a non-negative integer (a seq), not the string "4""#)
        #expect(invalidParams(["types": "set"], read) == #"params.types must be an array of action types, not the string "set""#)
        #expect(invalidParams(["types": []], read) == "params.types must list at least one action type (omit it for every type)")
        #expect(invalidParams(["types": ["set", 3]], read) == "params.types[1] must be a string, not 3")
        #expect(invalidParams(["type": ["set"]], read) == #"history has no param "type" (it takes from, to, limit, types, correlationId, changed, order, branch)"#)
        #expect(invalidParams(["order": "newest"], read) == #"params.order must be "asc" or "desc", not the string "newest""#)
        #expect(invalidParams(["changed": "cart"], read)?.contains("params.changed") == true)
    }

    // MARK: diff

    @Test func diffReadsBothSeqsInEitherOrder() throws {
        #expect(try DiffParams(params: ["from": 3, "to": 9]) == DiffParams(from: 3, to: 9, path: .root))
        #expect(try DiffParams(params: ["from": 9, "to": 3, "path": "/a"]) == DiffParams(from: 9, to: 3, path: JSONPointer(tokens: ["a"])))
    }

    @Test func diffNeedsBothSeqs() {
        let read = DiffParams.init(params:)
        #expect(invalidParams(nil, read) == "diff needs params.from, a seq (a non-negative integer)")
        #expect(invalidParams(["from": 1], read) == "diff needs params.to, a seq (a non-negative integer)")
        #expect(invalidParams(["from": 1, "to": nil], read) == "diff needs params.to, a seq (a non-negative integer)")
        #expect(invalidParams(["from": 1.25, "to": 2], read) == "params.from must be a non-negative integer (a seq), not 1.25")
        #expect(invalidParams(["from": 1, "to": 2, "path": "x"], read)
            == #"params.path is not a valid JSON Pointer (RFC 6901): JSON Pointer "x" must be empty or start with '/'"#)
    }

    // MARK: replay

    @Test func replayReadsSkipAsASet() throws {
        let params = try ReplayParams(params: ["skip": [7, 3, 7], "to": 12, "path": "/hp"])
        #expect(params == ReplayParams(to: 12, skip: [3, 7], path: JSONPointer(tokens: ["hp"])))
        #expect(try ReplayParams(params: ["skip": []]) == ReplayParams(to: nil, skip: [], path: .root))
    }

    @Test func replayRefusals() {
        let read = ReplayParams.init(params:)
        #expect(invalidParams(nil, read) == "replay needs params.skip, the seqs of the actions to leave out, such as [3, 7]")
        #expect(invalidParams(["skip": 3], read) == "params.skip must be an array of seqs, not 3")
        #expect(invalidParams(["skip": [1, -2]], read) == "params.skip[1] must be a non-negative integer (a seq), not -2")
        #expect(invalidParams(["skip": [0]], read) == "params.skip[0] must be 1 or more: seq 0 is the initial state, not an action")
        #expect(invalidParams(["skip": [1], "to": "latest"], read)
            == #"params.to must be a non-negative integer (a seq), not the string "latest""#)
    }

    // MARK: Client side

    @Test func clientParamsReadBack() throws {
        #expect(try HelloParams(params: HelloParams(client: "c", protocolVersion: 1).jsonValue) == HelloParams(client: "c", protocolVersion: 1))
        #expect(try StatsParams(params: StatsParams().jsonValue) == StatsParams())
        let get = GetParams(path: JSONPointer(tokens: ["a/b", "~"]), at: 4)
        #expect(try GetParams(params: get.jsonValue) == get)
        let subscribe = SubscribeParams(path: JSONPointer(tokens: ["x"]), since: 0, mode: .actions)
        #expect(try SubscribeParams(params: subscribe.jsonValue) == subscribe)
        #expect(try UnsubscribeParams(params: UnsubscribeParams(subscription: "s").jsonValue) == UnsubscribeParams(subscription: "s"))
        let history = HistoryParams(from: 2, to: 9, limit: 5, types: ["b", "a"])
        #expect(try HistoryParams(params: history.jsonValue) == history)
        let newest = HistoryParams(limit: 5, newestFirst: true)
        #expect(try HistoryParams(params: newest.jsonValue) == newest)
        let diff = DiffParams(from: 4, to: 1, path: JSONPointer(tokens: ["p"]))
        #expect(try DiffParams(params: diff.jsonValue) == diff)
        let replay = ReplayParams(to: 3, skip: [2, 1])
        #expect(try ReplayParams(params: replay.jsonValue) == replay)
    }

    @Test func clientParamsOmitDefaultsAndSortSets() {
        #expect(GetParams().jsonValue.jsonString == "{}")
        #expect(SubscribeParams().jsonValue.jsonString == "{}")
        #expect(HistoryParams().jsonValue.jsonString == "{}")
        #expect(HistoryParams(types: ["b", "a"]).jsonValue.jsonString == #"{"types":["a","b"]}"#)
        #expect(ReplayParams(skip: [9, 2, 5]).jsonValue.jsonString == #"{"skip":[2,5,9]}"#)
        #expect(GetParams(path: JSONPointer(tokens: ["a/b"]), at: 0).jsonValue.jsonString == #"{"at":0,"path":"/a~1b"}"#)
    }
}
