import ReelProtocol
import ReelQuery
import ReelStore
import Testing

/// Engine errors get their protocol codes in one place.
struct WireErrorTests {
    @Test(arguments: [
        (StoreError.Code.rejected, 1001), (.unknownActionType, 1002), (.seqMismatch, 1003), (.permissionDenied, 1004),
        (.pathNotFound, 1005), (.seqOutOfRange, 1006), (.shuttingDown, 1009), (.storage, 1010), (.invalidArgument, -32602),
    ])
    func everyEngineErrorHasItsProtocolCode(code: StoreError.Code, wire: Int) {
        let error = RPCError(StoreError(code, "what happened"))
        #expect(error.code == wire)
        #expect(error.message == "what happened")
    }

    @Test func aStaleExpectedSeqCarriesTheCurrentSeq() {
        let error = RPCError(StoreError(.seqMismatch, "stale", currentSeq: 9), expectedSeq: 4)
        #expect(error == .seqMismatch(expected: 4, current: 9))
        #expect(error.data == ["seq": 9])
    }
}
