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

/// `count` random lines one edit away from `seed` (a byte of `alphabet` put in place of one, or
/// inserted, or one removed): the inputs of the fast readers' agreement tests.
func linesOneEditAway(from seed: String, alphabet: [UInt8], count: Int) -> [[UInt8]] {
    var generator = SystemRandomNumberGenerator()
    let bytes = Array(seed.utf8)
    return (0..<count).map { _ in
        var edited = bytes
        let position = Int.random(in: 0..<edited.count, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: edited[position] = alphabet.randomElement(using: &generator)!
        case 1: edited.insert(alphabet.randomElement(using: &generator)!, at: position)
        default: edited.remove(at: position)
        }
        return edited
    }
}
