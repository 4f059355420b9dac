import Testing

@testable import ReelConsole

@Suite struct TerminalTextTests {
    static let widths: [(String, Int)] = [
        ("", 0),
        ("plain", 5),
        ("héllo", 5),  // precomposed
        ("he\u{301}llo", 5),  // combining accent: one cluster
        ("日本語", 6),
        ("ｈｉ", 4),  // fullwidth Latin
        ("한국어", 6),
        ("😀", 2),
        ("👨‍👩‍👧", 2),  // one ZWJ sequence
        ("🇫🇷", 2),  // a flag: two regional indicators, one cluster
        ("❤", 1),  // text presentation by default…
        ("❤\u{FE0F}", 2),  // …emoji presentation with VS16
        ("a\u{200B}b", 2),  // zero width space
        ("→", 1),
        ("…", 1),
    ]

    @Test(arguments: widths)
    func displayWidth(text: String, width: Int) {
        #expect(TerminalText.width(of: text) == width)
        #expect(TerminalText.width(of: Substring(text)) == width)
    }

    @Test func truncationKeepsWholeCharactersAndEndsInAnEllipsis() {
        #expect(TerminalText.truncating("short", toWidth: 10) == "short")
        #expect(TerminalText.truncating("exactly10!", toWidth: 10) == "exactly10!")
        #expect(TerminalText.truncating("eleven long", toWidth: 10) == "eleven lo…")
        #expect(TerminalText.truncating("日本語テキスト", toWidth: 6) == "日本…")  // 2+2+1
        #expect(TerminalText.truncating("日本語テキスト", toWidth: 5) == "日本…")
        #expect(TerminalText.truncating("日本語テキスト", toWidth: 4) == "日…")
        #expect(TerminalText.truncating("e\u{301}e\u{301}e\u{301}", toWidth: 2) == "e\u{301}…")
        #expect(TerminalText.truncating("one two three", toWidth: 9) == "one two…")  // not "one two …"
        #expect(TerminalText.truncating("abc", toWidth: 1) == "…")
        #expect(TerminalText.truncating("abc", toWidth: 0) == "")
        #expect(TerminalText.truncating("", toWidth: 0) == "")
    }

    @Test func controlCharactersAreEscaped() {
        #expect(TerminalText.escapingControlCharacters("plain é 日本") == "plain é 日本")
        #expect(TerminalText.escapingControlCharacters("a\nb\tc\rd") == #"a\nb\tc\rd"#)
        #expect(TerminalText.escapingControlCharacters("\u{1B}[2Jgone") == #"\u001b[2Jgone"#)
        #expect(TerminalText.escapingControlCharacters("\u{0}\u{7F}\u{85}\u{9F}") == #"\u0000\u007f\u0085\u009f"#)
        // Found by their bytes first: a C1 control after other non-ASCII text, and 0xC2 that
        // starts no control (a no-break space, `¢`).
        #expect(TerminalText.escapingControlCharacters("é\u{85}x") == #"é\u0085x"#)
        #expect(TerminalText.escapingControlCharacters("a\u{A0}b ¢") == "a\u{A0}b ¢")
        #expect(TerminalText.escapingControlCharacters(Substring("ab\u{1}c").dropFirst().description) == #"b\u0001c"#)
    }
}
