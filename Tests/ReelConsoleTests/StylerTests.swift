import Testing

@testable import ReelConsole

@Suite struct StylerTests {
    @Test func plainLeavesTextAlone() {
        #expect(Styler.plain.apply([.bold, .red], to: "error") == "error")
        #expect(Styler.plain.apply(.green, to: "") == "")
    }

    @Test func ansiWrapsTextInSGRAndReset() {
        #expect(Styler.ansi.apply(.red, to: "gone") == "\u{1B}[31mgone\u{1B}[0m")
        #expect(Styler.ansi.apply(.green, to: "new") == "\u{1B}[32mnew\u{1B}[0m")
        #expect(Styler.ansi.apply(.yellow, to: "changed") == "\u{1B}[33mchanged\u{1B}[0m")
        #expect(Styler.ansi.apply(.bold, to: "SEQ") == "\u{1B}[1mSEQ\u{1B}[0m")
        #expect(Styler.ansi.apply(.dim, to: "note") == "\u{1B}[2mnote\u{1B}[0m")
        #expect(Styler.ansi.apply([.red, .bold], to: "x") == "\u{1B}[1;31mx\u{1B}[0m")
        #expect(Styler.ansi.apply([.cyan, .dim, .blue, .magenta], to: "x") == "\u{1B}[2;34;35;36mx\u{1B}[0m")
    }

    @Test func shorthands() {
        #expect(Styler.ansi.bold("b") == "\u{1B}[1mb\u{1B}[0m")
        #expect(Styler.ansi.dim("d") == "\u{1B}[2md\u{1B}[0m")
        #expect(Styler.ansi.red("r") == "\u{1B}[31mr\u{1B}[0m")
        #expect(Styler.ansi.green("g") == "\u{1B}[32mg\u{1B}[0m")
        #expect(Styler.ansi.yellow("y") == "\u{1B}[33my\u{1B}[0m")
        #expect(Styler.plain.bold("b") + Styler.plain.red("r") == "br")
    }

    @Test func ansiLeavesEmptyTextAndNoStyleAlone() {
        #expect(Styler.ansi.apply(.red, to: "") == "")
        #expect(Styler.ansi.apply([], to: "text") == "text")
    }
}
