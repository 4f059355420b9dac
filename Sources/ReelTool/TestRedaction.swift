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
    private var issued: Set<String> = []

    init(_ paths: [String]) throws(JSONError) {
        patterns = try paths.map { path throws(JSONError) in try JSONPointer(path).tokens }
    }

    var isEmpty: Bool { patterns.isEmpty }

    /// A stock action's payload redacted by what it writes into the state: where `set` and
    /// `append` write `value` at `path` (and each `patch` operation its `value` at its `path`), the
    /// value redacted where it lands under a pattern, so that `--redact /users/*/email` alone hides
    /// the email a `set {"path": "/users/u2", "value": {"email": …}}` carries; any other payload (a
    /// `merge` is a merge patch of the state) as a document of the state's shape.
    mutating func redactStockPayload(type: String, _ payload: JSONValue) -> JSONValue {
        switch (type, payload) {
        case ("set", _): redactWritten(in: payload, appending: false)
        case ("append", _): redactWritten(in: payload, appending: true)
        case ("patch", .array(let operations)): .array(operations.map { redactWritten(in: $0, appending: false) })
        default: redact(payload)
        }
    }

    /// `{path, value, …}`: the value redacted where it lands under a pattern (at the end of the
    /// array at `path` when appending).
    private mutating func redactWritten(in operation: JSONValue, appending: Bool) -> JSONValue {
        guard case .object(var members) = operation, case .string(let text)? = members["path"], var written = members["value"],
            let path = try? JSONPointer(text)
        else { return operation }
        let target = path.tokens + (appending ? ["-"] : [])
        for pattern in patterns {
            if pattern.count <= target.count {
                // The whole value lands inside a redacted part.
                if Self.matches(pattern[...], target.prefix(pattern.count)) { written = .string(placeholder(for: written)) }
            } else if Self.matches(pattern.prefix(target.count), target[...]) {
                redact(&written, pattern.dropFirst(target.count))
            }
        }
        members["value"] = written
        return .object(members)
    }

    /// Whether a pattern's tokens match a path's (`*` matches any token, the append marker `-` too).
    private static func matches(_ pattern: ArraySlice<String>, _ tokens: ArraySlice<String>) -> Bool {
        pattern.count == tokens.count && zip(pattern, tokens).allSatisfy { $0 == "*" || $0 == $1 }
    }

    /// Where `value`, redacted, differs from itself: the pointers of values at a pattern that are
    /// not placeholders (empty when it is redacted already).
    mutating func exposed(in value: JSONValue) -> [(pointer: JSONPointer, value: JSONValue)] {
        let redacted = redact(value)
        guard redacted != value else { return [] }
        return JSONPatch(from: redacted, to: value).operations.compactMap { operation in
            value.value(at: operation.path).map { (operation.path, $0) }
        }
    }

    /// The pointers under which `value` holds `target`, at most `limit` of them.
    static func pointers(of target: JSONValue, in value: JSONValue, under base: [String] = [], limit: Int = 3) -> [JSONPointer] {
        if value == target { return [JSONPointer(tokens: base)] }
        var found: [JSONPointer] = []
        switch value {
        case .object(let members):
            for key in members.keys.sorted() where found.count < limit {
                found += pointers(of: target, in: members[key]!, under: base + [key], limit: limit - found.count)
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() where found.count < limit {
                found += pointers(of: target, in: element, under: base + [String(index)], limit: limit - found.count)
            }
        default:
            break
        }
        return found
    }

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
        // A placeholder stays itself: a state redacted again (to check it) is unchanged.
        if case .string(let text) = value, issued.contains(text) { return text }
        let key = value.jsonString
        if let known = placeholders[key] { return "redacted-\(known)" }
        let next = placeholders.count + 1
        placeholders[key] = next
        issued.insert("redacted-\(next)")
        return "redacted-\(next)"
    }
}
