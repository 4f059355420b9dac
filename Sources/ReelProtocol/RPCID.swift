import ReelJSON

/// The `id` of a JSON-RPC 2.0 request, echoed unchanged in its response.
///
/// JSON-RPC allows a string, a number or `null`. Reel takes strings and integers (every integer
/// that fits `Int64`): a fractional id would not survive every client's number handling, and a
/// `null` id is indistinguishable from the `null` of an error response to a request whose id
/// could not be read, so both are refused as invalid requests. `null` appears only in those error
/// responses, where ``RPCResponse/id`` is `nil`.
public enum RPCID: Sendable, Hashable {
    /// An integer id, such as `1`.
    case int(Int64)
    /// A string id, such as `"a7"`.
    case string(String)

    /// Reads an id from its JSON form.
    ///
    /// - Parameter json: The value of a request's `id` member.
    /// - Returns: `nil` when `json` is not a string or an integer (`null`, `1.5`, `true`, `[]`…).
    ///   `1.0` is refused too: the parser keeps integers written without a fraction as `.int`, and
    ///   echoing `1` for `1.0` would make the response fail a client's exact comparison.
    public init?(json: JSONValue) {
        switch json {
        case .int(let value): self = .int(value)
        case .string(let value): self = .string(value)
        default: return nil
        }
    }

    /// The id as it is written on the wire.
    public var jsonValue: JSONValue {
        switch self {
        case .int(let value): .int(value)
        case .string(let value): .string(value)
        }
    }

    /// Appends the id's JSON text to `bytes`.
    ///
    /// - Parameter bytes: The buffer to append UTF-8 text to.
    public func serialize(into bytes: inout [UInt8]) {
        jsonValue.serialize(into: &bytes)
    }
}

extension RPCID: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    /// An integer id from a literal, as in `let id: RPCID = 7`.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A string id from a literal, as in `let id: RPCID = "a7"`.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension RPCID: CustomStringConvertible {
    /// The id's JSON text: `7` or `"a7"`, so the two kinds stay apart in logs.
    public var description: String { jsonValue.jsonString }
}
