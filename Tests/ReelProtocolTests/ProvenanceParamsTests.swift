import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// `dispatch`'s `meta` and `history`'s `correlationId`: what is taken, and each way they are
/// refused, with the member and the reason in the message.
struct ProvenanceParamsTests {
    let read = DispatchParams.init(params:)
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func dispatch(meta: JSONValue) -> JSONValue {
        ["action": ["type": "x"], "meta": meta]
    }

    // MARK: dispatch meta, accepted

    @Test func readsEveryMember() throws {
        let params = try DispatchParams(params: Self.dispatch(meta: [
            "traceparent": .string(Self.traceparent), "correlationId": "order-17", "causationId": "41", "source": "checkout",
        ]))
        #expect(params.meta == ActionMeta(traceparent: Self.traceparent, correlationId: "order-17", causationId: "41", source: "checkout"))
    }

    @Test func readsSomeMembersAndBatches() throws {
        #expect(try DispatchParams(params: Self.dispatch(meta: ["correlationId": "c"])).meta == ActionMeta(correlationId: "c"))
        let batch = try DispatchParams(params: ["actions": [["type": "x"], ["type": "y"]], "meta": ["source": "cron"]])
        #expect(batch.meta == ActionMeta(source: "cron"))
    }

    @Test func nullEmptyAndNullMembersAreNoMeta() throws {
        #expect(try DispatchParams(params: Self.dispatch(meta: nil)).meta == nil)
        #expect(try DispatchParams(params: Self.dispatch(meta: [:])).meta == nil)
        #expect(try DispatchParams(params: Self.dispatch(meta: ["source": nil, "correlationId": nil])).meta == nil)
        #expect(try DispatchParams(params: Self.dispatch(meta: ["source": nil, "correlationId": "c"])).meta == ActionMeta(correlationId: "c"))
    }

    @Test func theLimitIsCountedInUTF8Bytes() throws {
        let longest = String(repeating: "é", count: 128)  // 256 bytes
        for member in ["correlationId", "causationId", "source"] {
            let params = try DispatchParams(params: Self.dispatch(meta: .object([member: .string(longest)])))
            #expect(params.meta?[try #require(ActionMeta.Member(rawValue: member))] == longest)
            #expect(invalidParams(Self.dispatch(meta: .object([member: .string(longest + "a")])), read)
                == "params.meta.\(member) is 257 bytes long; the limit is 256")
        }
    }

    @Test func roundTripsThroughTheClientsParams() throws {
        let meta = ActionMeta(traceparent: Self.traceparent, correlationId: "order-17", causationId: "41", source: "checkout")
        for params in [
            DispatchParams(action: Action(type: "x"), meta: meta),
            DispatchParams(batch: [Action(type: "x")], idempotencyKey: "k", meta: ActionMeta(source: "s")),
            DispatchParams(action: Action(type: "x"), meta: ActionMeta()),
        ] {
            #expect(try DispatchParams(params: params.jsonValue) == params)
        }
        #expect(DispatchParams(action: Action(type: "x"), meta: ActionMeta()).jsonValue == ["action": ["type": "x"]])
    }

    // MARK: dispatch meta, refused

    @Test func metaMustBeAnObject() {
        #expect(invalidParams(Self.dispatch(meta: "order-17"), read)
            == #"params.meta must be an object with any of causationId, correlationId, source, traceparent (strings), not the string "order-17""#)
        #expect(invalidParams(Self.dispatch(meta: [1]), read)
            == "params.meta must be an object with any of causationId, correlationId, source, traceparent (strings), not an array")
    }

    @Test func unknownMembersAreRefused() {
        #expect(invalidParams(Self.dispatch(meta: ["correlationID": "c"]), read)
            == #"params.meta has no member "correlationID" (it takes causationId, correlationId, source, traceparent)"#)
        #expect(invalidParams(Self.dispatch(meta: ["source": "s", "user": "bob", "tenant": "t"]), read)
            == #"params.meta has no member "tenant" (it takes causationId, correlationId, source, traceparent)"#)
    }

    @Test(arguments: [
        (5, "5"), (true, "true"), (["a"], "an array"), (["k": "v"], "an object"),
    ] as [(JSONValue, String)])
    func membersMustBeStrings(value: JSONValue, described: String) {
        for member in ["causationId", "correlationId", "source", "traceparent"] {
            #expect(invalidParams(Self.dispatch(meta: .object([member: value])), read)
                == "params.meta.\(member) must be a string, not \(described)")
        }
    }

    @Test(arguments: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "00-00000000000000000000000000000001-0000000000000001-ff",
    ])
    func aTraceparentInW3CFormIsTaken(traceparent: String) throws {
        #expect(ActionMeta.isTraceparent(traceparent))
        #expect(try DispatchParams(params: Self.dispatch(meta: ["traceparent": .string(traceparent)])).meta?.traceparent == traceparent)
    }

    @Test(arguments: [
        "",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  // uppercase
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // another version
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // a digit short
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  // not hex
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        "4bf92f3577b34da6a3ce929d0e0e4736",
    ])
    func aMalformedTraceparentIsRefused(traceparent: String) {
        #expect(!ActionMeta.isTraceparent(traceparent))
        #expect(invalidParams(Self.dispatch(meta: ["traceparent": .string(traceparent)]), read)
            == "params.meta.traceparent must be a W3C traceparent, 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags> in lowercase hex, neither id all zeros")
    }

    @Test func anOverlongTraceparentSaysItsLength() {
        let long = String(repeating: "0", count: 300)
        #expect(invalidParams(Self.dispatch(meta: ["traceparent": .string(long)]), read)
            == "params.meta.traceparent is 300 bytes long; the limit is 256")
    }

    // MARK: The fast path of dispatch lines

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"meta":{"correlationId":"c","source":"s"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"action":{"type":"x"},"idempotencyKey":"k"}}"#,
    ])
    func theFastPathReadsMetaAsTheGeneralPathDoes(line: String) throws {
        let fast = try #require(DispatchLineTests.fast(line))
        #expect(fast.params.meta != nil)
        #expect(DispatchLineTests.general(line)?.params == fast.params)
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"meta":{"correlationId":5}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"meta":{"user":"bob"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"meta":{"traceparent":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"meta":{},"meta":{}}}"#,
    ])
    func theFastPathLeavesBadMetaToTheGeneralPath(line: String) {
        #expect(DispatchLineTests.fast(line) == nil)
    }

    // MARK: history correlationId

    @Test func historyReadsACorrelationId() throws {
        let params = try HistoryParams(params: ["correlationId": "order-17", "types": ["set"], "order": "desc"])
        #expect(params.correlationId == "order-17")
        #expect(params.types == ["set"])
        #expect(params.newestFirst)
        #expect(try HistoryParams(params: ["correlationId": nil]).correlationId == nil)
        #expect(try HistoryParams(params: params.jsonValue) == params)
        #expect(HistoryParams(correlationId: "c").jsonValue == ["correlationId": "c"])
    }

    @Test func historyRefusesABadCorrelationId() {
        let read = HistoryParams.init(params:)
        #expect(invalidParams(["correlationId": 17], read) == "params.correlationId must be a string, not 17")
        #expect(invalidParams(["correlationId": .string(String(repeating: "c", count: 257))], read)
            == "params.correlationId is 257 bytes long; the limit is 256: no action carries a longer one")
    }
}
