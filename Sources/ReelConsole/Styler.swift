/// A combination of the few ANSI text attributes the console uses.
///
/// Colors are the terminal's own palette (SGR 31–36), so they follow the user's theme; combining
/// two colors is allowed but shows only one.
public struct TextStyle: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bold or bright (SGR 1): headers, keys.
    public static let bold = TextStyle(rawValue: 1 << 0)
    /// Faint (SGR 2): what matters less.
    public static let dim = TextStyle(rawValue: 1 << 1)
    /// Red (SGR 31): removals, errors.
    public static let red = TextStyle(rawValue: 1 << 2)
    /// Green (SGR 32): additions, success.
    public static let green = TextStyle(rawValue: 1 << 3)
    /// Yellow (SGR 33): changes, warnings.
    public static let yellow = TextStyle(rawValue: 1 << 4)
    /// Blue (SGR 34).
    public static let blue = TextStyle(rawValue: 1 << 5)
    /// Magenta (SGR 35).
    public static let magenta = TextStyle(rawValue: 1 << 6)
    /// Cyan (SGR 36).
    public static let cyan = TextStyle(rawValue: 1 << 7)

    /// SGR parameters in the order of the bits above, for example `"1;31"` for bold red.
    var sgrParameters: String {
        let codes: [(TextStyle, String)] = [
            (.bold, "1"), (.dim, "2"), (.red, "31"), (.green, "32"), (.yellow, "33"), (.blue, "34"),
            (.magenta, "35"), (.cyan, "36"),
        ]
        return codes.filter { contains($0.0) }.map(\.1).joined(separator: ";")
    }
}

/// Applies ``TextStyle``s as ANSI escape sequences, or not at all when color is off.
///
/// Decide once per destination (``init(_:for:)``), then pass the styler to whatever formats text
/// for it; with color off every method returns the text unchanged, so plain output is exactly
/// what a script or a test expects.
public struct Styler: Sendable, Hashable {
    /// Whether styles become escape sequences.
    public var isEnabled: Bool

    /// A styler that colors when `isEnabled`.
    ///
    /// - Parameter isEnabled: `true` to emit escape sequences.
    public init(isEnabled: Bool) {
        self.isEnabled = isEnabled
    }

    /// A styler for output to `sink`, as a `--color` choice decides for it.
    ///
    /// - Parameters:
    ///   - choice: `auto` looks at the sink and the environment (see `ColorChoice`).
    ///   - sink: Where the styled text will be written.
    public init(_ choice: ColorChoice, for sink: FileDescriptorSink) {
        self.init(isEnabled: choice.usesColor(for: sink))
    }

    /// No styling: text comes back unchanged.
    public static let plain = Styler(isEnabled: false)
    /// Always styling, whatever the destination.
    public static let ansi = Styler(isEnabled: true)

    /// The text wrapped in the style's escape sequence and a reset.
    ///
    /// - Parameters:
    ///   - style: The attributes; `[]` leaves the text alone.
    ///   - text: The text to style. Empty text stays empty, with no escape sequences around it.
    /// - Returns: `text`, styled when enabled.
    public func apply(_ style: TextStyle, to text: String) -> String {
        guard isEnabled, !style.isEmpty, !text.isEmpty else { return text }
        return "\u{1B}[\(style.sgrParameters)m\(text)\u{1B}[0m"
    }

    /// `text` in bold, when enabled: headers, names that matter.
    public func bold(_ text: String) -> String { apply(.bold, to: text) }
    /// `text` faint, when enabled: hints and notes.
    public func dim(_ text: String) -> String { apply(.dim, to: text) }
    /// `text` in red, when enabled: removals and errors.
    public func red(_ text: String) -> String { apply(.red, to: text) }
    /// `text` in green, when enabled: additions and success.
    public func green(_ text: String) -> String { apply(.green, to: text) }
    /// `text` in yellow, when enabled: changes and warnings.
    public func yellow(_ text: String) -> String { apply(.yellow, to: text) }
}
