/// A protocol message that writes itself as one line of JSON ending in `"\n"`.
public protocol LineEncodable {
    /// Appends the message and its `"\n"` to `bytes`.
    func encode(into bytes: inout [UInt8])
}

extension LineEncodable {
    /// The message as one line ending in `"\n"`. See ``encode(into:)``.
    public func encodedLine() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        encode(into: &bytes)
        return bytes
    }
}
