import ReelJSON
import ReelProtocol
import Testing

/// Reading one request line: what is accepted, and the exact error response for everything else.
struct RPCRequestTests {
    func accepted(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> RPCRequest? {
        switch RPCRequest.parse(line) {
        case .success(let request): return request
        case .failure(let failure):
            Issue.record("refused: \(failure.error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    func refused(_ line: String, maxDepth: Int = WireProtocol.defaultMaxDepth, sourceLocation: SourceLocation = #_sourceLocation) -> RPCErrorResponse? {
        switch RPCRequest.parse(line, maxDepth: maxDepth) {
        case .success(let request):
            Issue.record("accepted: \(request)", sourceLocation: sourceLocation)
            return nil
        case .failure(let failure): return failure
        }
    }

    // MARK: Accepted

    @Test func readsARequestWithAnIntegerID() {
        let request = accepted(#"{"jsonrpc":"2.0","id":7,"method":"get","params":{"path":"/a"}}"#)
        #expect(request == RPCRequest(id: 7, method: "get", params: ["path": "/a"]))
        #expect(request?.isNotification == false)
    }

    @Test func readsStringAndNegativeAndExtremeIDs() {
        #expect(accepted(#"{"jsonrpc":"2.0","id":"a7","method":"hello"}"#)?.id == .string("a7"))
        #expect(accepted(#"{"jsonrpc":"2.0","id":"","method":"hello"}"#)?.id == .string(""))
        #expect(accepted(#"{"jsonrpc":"2.0","id":-3,"method":"hello"}"#)?.id == .int(-3))
        #expect(accepted(#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"hello"}"#)?.id == .int(.max))
    }

    @Test func readsANotification() {
        let request = accepted(#"{"jsonrpc":"2.0","method":"stats"}"#)
        #expect(request == RPCRequest(id: nil, method: "stats"))
        #expect(request?.isNotification == true)
    }

    @Test func keepsParamsAsSent() {
        #expect(accepted(#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1,"a"]}"#)?.params == [1, "a"])
        #expect(accepted(#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#)?.params == .object([:]))
        #expect(accepted(#"{"jsonrpc":"2.0","id":1,"method":"x"}"#)?.params == nil)
    }

    @Test func toleratesSurroundingWhitespaceAndCRLF() {
        #expect(accepted(" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"} \r\n")?.method == "hello")
    }

    @Test func memberOrderDoesNotMatter() {
        #expect(accepted(#"{"method":"hello","params":{},"id":1,"jsonrpc":"2.0"}"#)?.method == "hello")
    }

    @Test func parsesFromRawBytes() {
        let line = Array(#"{"jsonrpc":"2.0","id":1,"method":"hello"}"#.utf8)
        let result = line.withUnsafeBytes { RPCRequest.parse($0) }
        #expect((try? result.get()) == RPCRequest(id: 1, method: "hello"))
    }

    // MARK: Parse errors (-32700, id null)

    @Test(arguments: ["", "   ", "{", #"{"jsonrpc":"2.0","id":1,"method":"hello""#, "hello", "{'a':1}",
                      #"{"jsonrpc":"2.0","id":1,"method":"hello"} x"#, #"{"a":1,}"#])
    func invalidJSONIsAParseErrorWithANullID(line: String) {
        let failure = refused(line)
        #expect(failure?.id == nil)
        #expect(failure?.error.code == RPCError.Code.parseError)
        #expect(failure?.error.message.hasPrefix("invalid JSON: ") == true)
        #expect(failure?.error.message.hasSuffix("; send one JSON-RPC 2.0 request object per line") == true)
    }

    @Test func invalidUTF8IsAParseError() {
        let line: [UInt8] = Array(#"{"jsonrpc":"2.0","id":1,"method":""#.utf8) + [0xFF] + Array(#""}"#.utf8)
        guard case .failure(let failure) = RPCRequest.parse(line) else {
            Issue.record("accepted invalid UTF-8")
            return
        }
        #expect(failure.error.code == RPCError.Code.parseError)
        #expect(failure.id == nil)
    }

    @Test func theParseErrorSaysWhereTheProblemIs() {
        let failure = refused(#"{"jsonrpc":"2.0","id":1 "method":"hello"}"#)
        #expect(failure?.error.message == #"invalid JSON: expected ',' or '}' after object member, found '"' at byte 24; send one JSON-RPC 2.0 request object per line"#)
    }

    @Test func nestingBeyondTheLimitIsTooLarge() {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"a":[[[1]]]}}"#
        #expect(accepted(line) != nil)
        let failure = refused(line, maxDepth: 4)
        #expect(failure == RPCErrorResponse(id: nil, error: RPCError(
            code: 1007, message: "the request nests arrays and objects deeper than 4 levels")))
    }

    // MARK: Invalid requests (-32600)

    @Test(arguments: ["[]", #"[{"jsonrpc":"2.0","id":1,"method":"hello"}]"#])
    func batchesAreRefused(line: String) {
        #expect(refused(line) == RPCErrorResponse(
            id: nil, error: RPCError(code: -32600, message: "batch requests are not supported; send one request per line")))
    }

    @Test(arguments: [("1", "1"), ("\"hello\"", "the string \"hello\""), ("null", "null"), ("true", "true")])
    func aNonObjectIsRefused(line: String, described: String) {
        #expect(refused(line) == RPCErrorResponse(id: nil, error: .invalidRequest(
            "a request must be a JSON object such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}, not \(described)")))
    }

    @Test(arguments: [("null", "null"), ("1.5", "1.5"), ("1.0", "1.0"), ("true", "true"), ("[1]", "an array"),
                      ("{}", "an object"), ("1e400", nil), ("9223372036854775808", "9.223372036854776e+18")])
    func anUnreadableIDIsRefusedWithANullID(id: String, described: String?) {
        let line = #"{"jsonrpc":"2.0","id":\#(id),"method":"hello"}"#
        let failure = refused(line)
        if let described {
            #expect(failure == RPCErrorResponse(id: nil, error: .invalidRequest(
                "id must be a string or an integer, not \(described) (omit it for a notification)")))
        } else {
            // 1e400 does not fit a Double: the parser refuses it before the id is looked at.
            #expect(failure?.error.code == RPCError.Code.parseError)
        }
    }

    @Test func aWrongJSONRPCVersionIsRefusedWithTheID() {
        #expect(refused(#"{"id":3,"method":"hello"}"#) == RPCErrorResponse(
            id: 3, error: .invalidRequest("\"jsonrpc\": \"2.0\" is missing")))
        #expect(refused(#"{"jsonrpc":"1.0","id":"q","method":"hello"}"#) == RPCErrorResponse(
            id: "q", error: .invalidRequest("jsonrpc must be the string \"2.0\", not \"1.0\"")))
        #expect(refused(#"{"jsonrpc":2.0,"id":3,"method":"hello"}"#) == RPCErrorResponse(
            id: 3, error: .invalidRequest("jsonrpc must be the string \"2.0\", not 2.0")))
    }

    @Test func aMissingOrNonStringMethodIsRefusedWithTheID() {
        #expect(refused(#"{"jsonrpc":"2.0","id":3}"#) == RPCErrorResponse(
            id: 3, error: .invalidRequest("method is missing")))
        #expect(refused(#"{"jsonrpc":"2.0","id":3,"method":7}"#) == RPCErrorResponse(
            id: 3, error: .invalidRequest("method must be a string, not 7")))
        #expect(refused(#"{"jsonrpc":"2.0","id":3,"method":null}"#) == RPCErrorResponse(
            id: 3, error: .invalidRequest("method must be a string, not null")))
        // The JSON-RPC 2.0 specification's own example: no id, so the answer's id is null.
        #expect(refused(#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#) == RPCErrorResponse(
            id: nil, error: .invalidRequest("method must be a string, not 1")))
    }

    @Test(arguments: [("\"bar\"", "the string \"bar\""), ("3", "3"), ("null", "null"), ("false", "false")])
    func paramsThatAreNotStructuredAreRefusedWithTheID(params: String, described: String) {
        #expect(refused(#"{"jsonrpc":"2.0","id":"p","method":"get","params":\#(params)}"#) == RPCErrorResponse(
            id: "p", error: .invalidRequest("params must be an object or an array, not \(described) (omit it for none)")))
    }

    @Test func anUnknownMemberIsRefusedWithTheID() {
        #expect(refused(#"{"jsonrpc":"2.0","id":4,"method":"get","parms":{"at":3}}"#) == RPCErrorResponse(
            id: 4, error: .invalidRequest(
                "unknown member \"parms\" in the request (a request has jsonrpc, id, method and params)")))
    }

    // MARK: Encoding

    @Test func encodesARequestAsOneLineInEnvelopeOrder() {
        let request = RPCRequest(id: 1, method: "get", params: ["path": "/a", "at": 3])
        #expect(request.encodedLine() == line(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"at":3,"path":"/a"}}"#))
        #expect(RPCRequest(id: nil, method: "stats").encodedLine() == line(#"{"jsonrpc":"2.0","method":"stats"}"#))
    }

    @Test(arguments: [
        RPCRequest(id: 1, method: "hello", params: ["client": "reel", "protocol": 1]),
        RPCRequest(id: "line\nbreak \"quoted\" é", method: "get"),
        RPCRequest(id: nil, method: "dispatch", params: ["action": ["type": "set", "payload": ["text": "a\nb"]]]),
        RPCRequest(id: .int(.min), method: "x", params: []),
    ])
    func encodedRequestsParseBack(request: RPCRequest) throws {
        let line = request.encodedLine()
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try RPCRequest.parse(line).get() == request)
    }
}
