import ReelJSON

// Shared reading of results, the counterpart of ParamsReader: lenient where the protocol allows
// additions (members a reader does not know are ignored, so a newer server keeps working), strict
// about what the protocol promises (docs/REFERENCE.md) (a result without its `seq` is refused, not read as zero).

/// Reads the members of a result object, wording every problem the same way:
/// "a <what> result needs <member> (<kind>)".
struct ResultReader {
    let members: JSONObject
    let what: String

    init(_ json: JSONValue, _ what: String) throws(RPCError) {
        guard case .object(let members) = json else {
            throw .invalidRequest("\(what) must be an object, not \(json.described)")
        }
        self.members = members
        self.what = what
    }

    private func missing(_ key: String, _ kind: String) -> RPCError {
        .invalidRequest("\(what) needs \(key) (\(kind))")
    }

    /// A member that may be anything, `null` included, but must be there.
    func value(_ key: String) throws(RPCError) -> JSONValue {
        guard let value = members[key] else { throw missing(key, "a JSON value") }
        return value
    }

    func seq(_ key: String) throws(RPCError) -> UInt64 {
        guard let number = members[key]?.intValue, let seq = UInt64(exactly: number) else {
            throw missing(key, "a seq, a non-negative integer")
        }
        return seq
    }

    /// A seq that may be absent or `null`.
    func optionalSeq(_ key: String) throws(RPCError) -> UInt64? {
        guard let value = members[key], !value.isNull else { return nil }
        return try seq(key)
    }

    func int(_ key: String) throws(RPCError) -> Int64 {
        guard let number = members[key]?.intValue else { throw missing(key, "an integer") }
        return number
    }

    func string(_ key: String) throws(RPCError) -> String {
        guard case .string(let text)? = members[key] else { throw missing(key, "a string") }
        return text
    }

    /// A string that may be absent.
    func optionalString(_ key: String) throws(RPCError) -> String? {
        guard let value = members[key], !value.isNull else { return nil }
        return try string(key)
    }

    func array(_ key: String) throws(RPCError) -> [JSONValue] {
        guard case .array(let elements)? = members[key] else { throw missing(key, "an array") }
        return elements
    }

    /// An array that may be absent (read as empty).
    func optionalArray(_ key: String) throws(RPCError) -> [JSONValue] {
        guard let value = members[key], !value.isNull else { return [] }
        return try array(key)
    }

    /// A flag that is `true` only when present and `true`.
    func flag(_ key: String) -> Bool { members[key] == true }
}
