import ReelJSON
import ReelProtocol
import Testing

/// The bytes of `text` followed by the newline that ends every protocol line, for golden frames
/// written as string literals without the `\n`.
func line(_ text: String) -> [UInt8] {
    Array(text.utf8) + [UInt8(ascii: "\n")]
}

/// Bytes as text, so a failed golden comparison prints something readable.
func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// Reads params that must be refused with -32602, and returns the message for an exact check.
func invalidParams<T>(
    _ params: JSONValue?, _ read: (JSONValue?) throws(RPCError) -> T,
    sourceLocation: SourceLocation = #_sourceLocation
) -> String? {
    do {
        let value = try read(params)
        Issue.record("accepted as \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        #expect(error.code == RPCError.Code.invalidParams, "\(error)", sourceLocation: sourceLocation)
        return error.message
    }
}
