import ReelCore
import ReelJSON
import ReelProtocol
import Testing

/// The fast read of a plain `dispatch` line agrees with the general path (``RPCRequest`` then
/// ``RPCCall``) on every line it accepts, and accepts the plain forms clients send.
struct DispatchLineTests {
    /// What the general path makes of a line, when it is a dispatch.
    static func general(_ line: String) -> (id: RPCID, params: DispatchParams)? {
        guard case .success(let request) = RPCRequest.parse(line), let id = request.id,
            let params = (try? RPCCall(request))?.params(as: Method.Dispatch.self)
        else { return nil }
        return (id, params)
    }

    static func fast(_ line: String) -> (id: RPCID, params: DispatchParams)? {
        Array(line.utf8).withUnsafeBytes { DispatchLine.read($0) }
    }

    /// Fails unless the fast path answers `nil` or exactly what the general path answers.
    static func expectAgreement(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let fast = fast(line) else { return }
        let general = general(line)
        #expect(general?.id == fast.id, "id of \(line)", sourceLocation: sourceLocation)
        #expect(general?.params == fast.params, "params of \(line)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/a","value":1}}}}"#,
        #"{"jsonrpc":"2.0","method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/c0","value":"xx"}}},"id":7}"#,
        #"{"id":"c-1","params":{"idempotencyKey":"k1","action":{"payload":[1,{"a":null}],"type":"add"},"expectedSeq":41},"method":"dispatch","jsonrpc":"2.0"}"#,
        "  {\"jsonrpc\" : \"2.0\" , \"id\" : -3 ,\n\"method\":\"dispatch\",\t\"params\":{ \"action\" : { \"type\" : \"reset\" } } }\r\n",
        #"{"jsonrpc":"2.0","id":2,"method":"dispatch","params":{"action":{"type":"x","payload":null},"expectedSeq":null,"idempotencyKey":null}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"dispatch","params":{"action":{"type":"x"},"expectedSeq":5.0}}"#,
        #"{"jsonrpc":"2.0","id":3,"method":"dispatch","params":{"action":{"type":"\u0073et","payload":"caf\u00e9 \ud83d\ude00"}}}"#,
        #"{"jsonrpc":"2.0","id":4,"method":"dispatch","params":{"action":{"type":"@revert","payload":{"to":3}}}}"#,
        #"{"jsonrpc":"2.0","id":5,"method":"dispatch","params":{"action":{"type":"set","payload":{}}}}"#,
    ])
    func readsPlainDispatchesAsTheGeneralPathDoes(line: String) throws {
        let fast = try #require(Self.fast(line))
        let general = try #require(Self.general(line))
        #expect(fast.id == general.id)
        #expect(fast.params == general.params)
    }

    @Test(arguments: [
        // Other methods, batches, missing or repeated members, escaped keys: the general path's.
        #"{"jsonrpc":"2.0","id":1,"method":"get","params":{}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"actions":[{"type":"x"}]}}"#,
        #"{"jsonrpc":"2.0","method":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"id":2,"method":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x","type":"y"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"action":{"type":"y"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"\u006dethod":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"}},"extra":1}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x","extra":1}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":""}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"payload":1}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":null}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"expectedSeq":-1}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"idempotencyKey":""}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},"idempotencyKey":7}}"#,
        #"{"jsonrpc":"2.0","id":1.5,"method":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":null,"method":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"1.0","id":1,"method":"dispatch","params":{"action":{"type":"x"}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":[{"type":"x"}]}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"}}} x"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x"},}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x","payload":01}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x","payload":"a"#,
        "",
        "[]",
    ])
    func leavesEverythingElseToTheGeneralPath(line: String) {
        #expect(Self.fast(line) == nil)
    }

    @Test func refusesWhatNestsDeeperThanTheLimitAsTheGeneralPathDoes() {
        let deep = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        let line = #"{"jsonrpc":"2.0","id":1,"method":"dispatch","params":{"action":{"type":"x","payload":"# + deep + "}}}"
        let accepted = Array(line.utf8).withUnsafeBytes { DispatchLine.read($0, maxDepth: 13) }
        let refused = Array(line.utf8).withUnsafeBytes { DispatchLine.read($0, maxDepth: 12) }
        #expect(accepted != nil)
        #expect(refused == nil)
        guard case .failure = RPCRequest.parse(line, maxDepth: 12) else {
            Issue.record("the general path should refuse the line at depth 12 too")
            return
        }
        guard case .success = RPCRequest.parse(line, maxDepth: 13) else {
            Issue.record("the general path should read the line at depth 13 too")
            return
        }
    }

    /// Lines one edit away from plain dispatches: whatever the fast path accepts, the general path
    /// reads the same. (The `request` fuzz target runs the same check on whatever libFuzzer makes.)
    @Test func agreesWithTheGeneralPathOnEditedLines() {
        let seeds = [
            #"{"jsonrpc":"2.0","id":12,"method":"dispatch","params":{"action":{"type":"set","payload":{"path":"/a","value":[1,2.5,"\u00e9"]}},"expectedSeq":3,"idempotencyKey":"k"}}"#,
            #"{"method":"dispatch","params":{"action":{"payload":null,"type":"t"}},"id":"x","jsonrpc":"2.0"}"#,
        ]
        let alphabet = Array(#"{}[]":,\ 0129-.eEtrufalsn"#.utf8) + [0x0A, 0xC3, 0xA9, 0x00, 0x7F]
        var accepted = 0
        for seed in seeds {
            for edited in linesOneEditAway(from: seed, alphabet: alphabet, count: 3_000) {
                let line = String(decoding: edited, as: UTF8.self)
                guard String(validating: edited, as: UTF8.self) != nil else {
                    // Invalid UTF-8: neither path may accept it.
                    #expect(edited.withUnsafeBytes { DispatchLine.read($0) } == nil)
                    continue
                }
                if Self.fast(line) != nil { accepted += 1 }
                Self.expectAgreement(line)
            }
        }
        #expect(accepted > 0)
    }
}
