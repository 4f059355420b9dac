import ReelJSON

/// `testgen --redact P`: the values at P (a JSON Pointer whose `*` tokens match any member or
/// index) in the starting state and in every action's payload, replaced by placeholders.
///
/// A placeholder is the string `redacted-N`, the same N for the same original value wherever it
/// appears, so that a reducer comparing two redacted values (an email in a payload and in the
/// state) still finds them equal, and the file shows nothing of them.
struct TestRedaction {
    let patterns: [[String]]
    private var placeholders: [String: Int] = [:]

    init(_ paths: [String]) throws(JSONError) {
        patterns = try paths.map { path throws(JSONError) in try JSONPointer(path).tokens }
    }

    var isEmpty: Bool { patterns.isEmpty }

    /// `value` with every value at a pattern replaced.
    mutating func redact(_ value: JSONValue) -> JSONValue {
        var value = value
        for pattern in patterns { redact(&value, pattern[...]) }
        return value
    }

    private mutating func redact(_ value: inout JSONValue, _ pattern: ArraySlice<String>) {
        guard let token = pattern.first else {
            value = .string(placeholder(for: value))
            return
        }
        let rest = pattern.dropFirst()
        switch value {
        case .object(var members):
            let keys = token == "*" ? Array(members.keys) : (members[token] == nil ? [] : [token])
            guard !keys.isEmpty else { return }
            value = .null  // (the members are changed in place, not copied)
            for key in keys { redact(&members[key]!, rest) }
            value = .object(members)
        case .array(var elements):
            let indices = token == "*" ? Array(elements.indices) : Int(token).map { elements.indices.contains($0) ? [$0] : [] } ?? []
            guard !indices.isEmpty else { return }
            value = .null
            for index in indices { redact(&elements[index], rest) }
            value = .array(elements)
        default:
            return
        }
    }

    private mutating func placeholder(for value: JSONValue) -> String {
        let key = value.jsonString
        if let known = placeholders[key] { return "redacted-\(known)" }
        let next = placeholders.count + 1
        placeholders[key] = next
        return "redacted-\(next)"
    }
}
