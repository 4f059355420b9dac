import Testing

@testable import ReelConsole

@Suite struct TableTests {
    static func logTable() -> Table {
        var table = Table(columns: [
            Table.Column("SEQ", alignment: .right),
            Table.Column("TYPE"),
            Table.Column("PEER"),
        ])
        table.append(["1", "todos/add", "uid 1000"])
        table.append([Table.Cell("12"), Table.Cell("set", style: .green), Table.Cell("uid 0")])
        return table
    }

    @Test func columnsAreAsWideAsTheirWidestCell() {
        #expect(
            Self.logTable().render() == """
                SEQ  TYPE       PEER
                  1  todos/add  uid 1000
                 12  set        uid 0

                """
        )
    }

    @Test func colorStylesTextButNotPadding() {
        #expect(
            Self.logTable().render(styler: .ansi) == """
                \u{1B}[1mSEQ\u{1B}[0m  \u{1B}[1mTYPE\u{1B}[0m       \u{1B}[1mPEER\u{1B}[0m
                  1  todos/add  uid 1000
                 12  \u{1B}[32mset\u{1B}[0m        uid 0

                """
        )
    }

    @Test func noLineEndsInSpaces() {
        var table = Table(columns: [Table.Column("NAME"), Table.Column("NOTE"), Table.Column("N", alignment: .right)])
        table.append(["a", "", ""])
        table.append(["bb", "note   "])
        // Other whitespace at a cell's end (no-break, ideographic) goes too; other letters stay.
        table.append(["c", "é\u{A0} \u{3000}"])
        table.append(["d", "日本"])
        table.append(["", "", "7"])
        table.append([] as [String])
        let text = table.render()
        #expect(
            text == """
                NAME  NOTE  N
                a
                bb    note
                c     é
                d     日本
                            7


                """
        )
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            #expect(line.last != " ", "\(line)")
        }
    }

    @Test func aColumnCanBeCutToAMaximumWidth() {
        var table = Table(columns: [Table.Column("SEQ", alignment: .right), Table.Column("PAYLOAD", maxWidth: 12)])
        table.append(["1", #"{"title":"buy milk and eggs"}"#])
        table.append(["2", "{}"])
        #expect(
            table.render() == """
                SEQ  PAYLOAD
                  1  {"title":"b…
                  2  {}

                """
        )
    }

    @Test func theFlexibleColumnGivesWayToTheLineWidth() {
        var table = Table(columns: [Table.Column("SEQ", alignment: .right), Table.Column("SUMMARY"), Table.Column("PEER")], flexibleColumn: 1)
        table.append(["1", "add /todos/3 {\"title\":\"milk\"}", "uid 1000"])
        table.append(["2", "remove /todos/1", "uid 0"])
        // Natural width: 3 + 2 + 29 + 2 + 8 = 44; at 30 the summary loses 14 columns.
        #expect(
            table.render(lineWidth: 30) == """
                SEQ  SUMMARY          PEER
                  1  add /todos/3 {…  uid 1000
                  2  remove /todos/1  uid 0

                """
        )
        // It fits: nothing changes.
        #expect(table.render(lineWidth: 44) == table.render())
        // Never narrower than its header.
        #expect(
            table.render(lineWidth: 10) == """
                SEQ  SUMMARY  PEER
                  1  add /t…  uid 1000
                  2  remove…  uid 0

                """
        )
    }

    /// A table printed in parts (`reel log`, a page at a time): the first part's layout fixes the
    /// widths, later parts keep them (cutting what does not fit), and the last column takes the
    /// rest of the line.
    @Test func laterPartsKeepTheFirstPartsLayout() {
        var first = Table(columns: [Table.Column("SEQ", alignment: .right), Table.Column("TYPE"), Table.Column("PAYLOAD")], flexibleColumn: 2)
        first.append(["9", "set", "{}"])
        let layout = first.layout(lineWidth: 30, minimumWidths: [4, 6])
        #expect(layout.widths == [4, 6, 30 - 4 - 6 - 2 - 2])
        #expect(
            first.render(layout: layout) == """
                 SEQ  TYPE    PAYLOAD
                   9  set     {}

                """
        )
        var later = Table(columns: first.columns, flexibleColumn: 2)
        later.showsHeader = false
        later.append(["10", "increment", #"{"path":"/counter","by":1000000}"#])
        #expect(later.render(layout: layout) == "  10  incre…  " + #"{"path":"/count…"# + "\n")
        // Without a line width the last column takes what its cells need.
        let unbounded = first.layout(minimumWidths: [4, 6])
        #expect(unbounded.widths == [4, 6, .max])
        #expect(later.render(layout: unbounded) == "  10  incre…  " + #"{"path":"/counter","by":1000000}"# + "\n")
    }

    @Test func wideCharactersAndCombiningAccentsLineUp() {
        var table = Table(columns: [Table.Column("NAME"), Table.Column("HP", alignment: .right)])
        table.append(["日本", "10"])
        table.append(["Zoe\u{308}", "7"])  // "Zoë" with a combining diaeresis: 3 columns
        table.append(["😀 hero", "100"])
        #expect(
            table.render() == """
                NAME      HP
                日本      10
                Zoe\u{308}        7
                😀 hero  100

                """
        )
    }

    @Test func cellsStayOnOneLine() {
        var table = Table(columns: [Table.Column("TYPE"), Table.Column("NOTE")])
        table.append(["a\nb", "\u{1B}[31mred?"])
        #expect(
            table.render() == #"""
                TYPE  NOTE
                a\nb  \u001b[31mred?

                """#
        )
    }

    @Test func headersCanBeLeftOut() {
        var table = Table(columns: [Table.Column("KEY"), Table.Column("VALUE", alignment: .right)])
        table.showsHeader = false
        #expect(table.render() == "")
        table.append(["actions", "1204"])
        table.append(["checkpoints", "3"])
        table.separator = " : "
        #expect(
            table.render(styler: .ansi) == """
                actions     : 1204
                checkpoints :    3

                """
        )
    }
}
