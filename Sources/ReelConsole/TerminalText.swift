/// How much room text takes in a terminal, and how to make untrusted text safe to show there.
///
/// Widths are counted per grapheme cluster (`Character`), the unit a terminal draws as one glyph:
/// a letter with combining accents is 1 column, an East Asian wide or fullwidth character and an
/// emoji shown as emoji are 2, and zero-width characters (format controls such as U+200B, a
/// combining mark with nothing to attach to) are 0. This is the common `wcwidth` reading; a
/// terminal with a different font or Unicode version may differ for rare characters.
public enum TerminalText {
    /// The number of terminal columns `text` takes. Assumes no control characters (escape them
    /// first with ``escapingControlCharacters(_:)``) and no escape sequences.
    ///
    /// - Parameter text: One line of text.
    public static func width(of text: some StringProtocol) -> Int {
        // ASCII is one column per byte; only text with other bytes needs the grapheme walk. (The
        // bytes looked at where they lie: through the view's generic iteration, an index step
        // per byte, this was a tenth of listing a million actions.)
        let printableASCII = { (byte: UInt8) in byte >= 0x20 && byte < 0x7F }
        let ascii = text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(printableASCII) } ?? text.utf8.allSatisfy(printableASCII)
        if ascii { return text.utf8.count }
        return text.reduce(0) { $0 + width(of: $1) }
    }

    /// The number of terminal columns one grapheme cluster takes: 0, 1 or 2.
    ///
    /// - Parameter character: The cluster.
    public static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        let value = first.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        switch first.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return 0
        case .format where value != 0xAD: return 0  // a soft hyphen is drawn
        default: break
        }
        if isWide(value) || first.properties.isEmojiPresentation { return 2 }
        // A text-style emoji followed by VS16 (U+FE0F) asks for emoji presentation: "❤️", "1️⃣".
        if first.properties.isEmoji, scalars.contains("\u{FE0F}") { return 2 }
        return 1
    }

    /// `text` cut to at most `width` columns, ending in `…` when anything was cut.
    ///
    /// - Parameters:
    ///   - text: One line of text.
    ///   - width: The most columns the result may take; `…` is one of them.
    /// - Returns: `text` itself when it fits; otherwise the longest prefix of whole characters
    ///   that fits with `…` after it (never a wide character split in half), trailing spaces
    ///   dropped before the `…`.
    public static func truncating(_ text: String, toWidth width: Int) -> String {
        guard width > 0 else { return "" }
        if Self.width(of: text) <= width { return text }
        var result = ""
        var used = 0
        for character in text {
            let characterWidth = Self.width(of: character)
            if used + characterWidth > width - 1 { break }
            result.append(character)
            used += characterWidth
        }
        // "for …" reads as a gap: the ellipsis goes right after the last word.
        while result.last?.isWhitespace == true { result.removeLast() }
        return result + "…"
    }

    /// `text` with every control character written as its JSON escape (`\n`, `\t`, `\u001b`…).
    ///
    /// State and action payloads are data from other programs. Printed raw, a newline would break
    /// a table's layout and an ESC could send the terminal commands (retitle the window, move the
    /// cursor, hide text); escaped, both are visible and harmless. C0 controls, DEL and C1
    /// controls are escaped; everything else is kept.
    ///
    /// - Parameter text: Text from outside the program.
    /// - Returns: `text` when it has no control characters (without copying), else the escaped text.
    public static func escapingControlCharacters(_ text: String) -> String {
        // By bytes first: a C1 control is 0xC2 0x80…0x9F in UTF-8, so text without a byte below
        // 0x20, a DEL or a 0xC2 has none, and its scalars need not be decoded.
        let mayBeControl = { (byte: UInt8) in byte < 0x20 || byte == 0x7F || byte == 0xC2 }
        let suspect = text.utf8.withContiguousStorageIfAvailable { $0.contains(where: mayBeControl) } ?? text.utf8.contains(where: mayBeControl)
        guard suspect, text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
    }

    /// East Asian Wide and Fullwidth ranges (Markus Kuhn's `wcwidth`, with later CJK extensions):
    /// Hangul Jamo, CJK, Hangul syllables, compatibility and fullwidth forms, the
    /// supplementary ideographic planes. Emoji are handled by their Unicode properties instead.
    private static func isWide(_ value: UInt32) -> Bool {
        guard value >= 0x1100 else { return false }
        return value <= 0x115F
            || value == 0x2329 || value == 0x232A
            || (0x2E80...0xA4CF).contains(value) && value != 0x303F
            || (0xA960...0xA97F).contains(value)
            || (0xAC00...0xD7A3).contains(value)
            || (0xF900...0xFAFF).contains(value)
            || (0xFE10...0xFE19).contains(value)
            || (0xFE30...0xFE6F).contains(value)
            || (0xFF00...0xFF60).contains(value)
            || (0xFFE0...0xFFE6).contains(value)
            || (0x1B000...0x1B2FF).contains(value)
            || (0x20000...0x2FFFD).contains(value)
            || (0x30000...0x3FFFD).contains(value)
    }
}
