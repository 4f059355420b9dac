import ReelJSON

/// The styles of the parts of JSON text.
public struct JSONTheme: Sendable, Hashable {
    /// Object member names, quotes included.
    public var key: TextStyle
    /// String values, quotes included.
    public var string: TextStyle
    /// Numbers.
    public var number: TextStyle
    /// `true`, `false` and `null`.
    public var literal: TextStyle

    /// A theme.
    ///
    /// - Parameters:
    ///   - key: Object member names, quotes included.
    ///   - string: String values, quotes included.
    ///   - number: Numbers.
    ///   - literal: `true`, `false` and `null`.
    public init(key: TextStyle, string: TextStyle, number: TextStyle, literal: TextStyle) {
        self.key = key
        self.string = string
        self.number = number
        self.literal = literal
    }

    /// Blue bold keys, green strings, cyan numbers, magenta literals; punctuation unstyled.
    public static let standard = JSONTheme(key: [.bold, .blue], string: .green, number: .cyan, literal: .magenta)
}

/// JSON for people, as `reel get` prints it: indented, keys sorted, colored when color is on.
///
/// The layout is exactly `JSONValue.prettyPrinted(indent:)`: members sorted by the UTF-8 bytes of
/// their keys, one element or member per line, `": "` after keys, `[]` and `{}` for empty
/// containers. With color off the output *is* `prettyPrinted`, so it is valid JSON a script can
/// parse; with color on, removing the escape sequences gives the same text. Strings are escaped
/// as JSON escapes them, so no control character from the data reaches the terminal.
public struct JSONPrettyPrinter: Sendable {
    /// Colors when enabled; with it off the output is plain JSON.
    public var styler: Styler
    /// The style of each kind of token.
    public var theme: JSONTheme
    /// Spaces per nesting level.
    public var indent: Int

    /// A printer.
    ///
    /// - Parameters:
    ///   - styler: Colors when enabled.
    ///   - theme: The style of each kind of token.
    ///   - indent: Spaces per nesting level.
    public init(styler: Styler = .plain, theme: JSONTheme = .standard, indent: Int = 2) {
        self.styler = styler
        self.theme = theme
        self.indent = indent
    }

    /// The pretty text of `value`, without a trailing newline.
    ///
    /// - Parameter value: Any JSON value.
    public func format(_ value: JSONValue) -> String {
        guard styler.isEnabled else { return value.prettyPrinted(indent: indent) }
        var output = ""
        append(value, level: 0, to: &output)
        return output
    }

    private func append(_ value: JSONValue, level: Int, to output: inout String) {
        func newline(_ level: Int) {
            output += "\n" + String(repeating: " ", count: max(0, indent) * level)
        }
        switch value {
        case .array(let elements) where !elements.isEmpty:
            output += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { output += "," }
                newline(level + 1)
                append(element, level: level + 1, to: &output)
            }
            newline(level)
            output += "]"
        case .object(let members) where !members.isEmpty:
            output += "{"
            // The order `prettyPrinted` uses: by UTF-8 bytes, not by `String`'s `<`.
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (position, member) in sorted.enumerated() {
                if position > 0 { output += "," }
                newline(level + 1)
                output += styler.apply(theme.key, to: JSONValue.string(member.key).jsonString)
                output += ": "
                append(member.value, level: level + 1, to: &output)
            }
            newline(level)
            output += "}"
        case .string:
            output += styler.apply(theme.string, to: value.jsonString)
        case .int, .double:
            output += styler.apply(theme.number, to: value.jsonString)
        case .bool, .null:
            output += styler.apply(theme.literal, to: value.jsonString)
        case .array, .object:
            output += value.jsonString  // empty: "[]" or "{}"
        }
    }
}
