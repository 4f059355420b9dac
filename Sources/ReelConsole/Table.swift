/// Rows of text in aligned columns under a header, as `reel log` and `reel stats` print them.
///
/// ```
/// SEQ  TYPE        PEER
///   1  todos/add   uid 1000
///  12  set         uid 0
/// ```
///
/// Each column is as wide as its widest cell or header, in terminal columns (as `TerminalText`
/// counts them, so wide characters and combining accents line up), and cells are separated by
/// ``separator``.
/// A column may have a ``Column/maxWidth``: longer cells are cut with `…`. One column may be
/// the ``flexibleColumn``: when a ``render(styler:lineWidth:)`` call gives a line width, that
/// column gives up what the line needs to fit, down to the width of its header.
///
/// Lines never end in spaces: padding after the last non-empty cell is left out. Cells are one
/// line each: control characters are shown escaped (``TerminalText/escapingControlCharacters(_:)``)
/// and trailing whitespace is dropped.
public struct Table: Sendable {
    /// Where a cell's text sits in its column.
    public enum Alignment: Sendable, Hashable {
        /// Padding after the text: for names and text.
        case left
        /// Padding before the text: for numbers, so their digits line up.
        case right
    }

    /// One column: its header and how its cells are laid out.
    public struct Column: Sendable, Hashable {
        /// The text of the header line.
        public var header: String
        /// Where cells sit in the column.
        public var alignment: Alignment
        /// The most terminal columns a cell (or the header) may take before it is cut with `…`.
        public var maxWidth: Int?

        /// A column.
        ///
        /// - Parameters:
        ///   - header: The header text.
        ///   - alignment: Where text sits in the column.
        ///   - maxWidth: Cut longer cells to this many columns; `nil` for no limit.
        public init(_ header: String, alignment: Alignment = .left, maxWidth: Int? = nil) {
            self.header = header
            self.alignment = alignment
            self.maxWidth = maxWidth
        }
    }

    /// One cell: text and how to style it when color is on.
    public struct Cell: Sendable, Hashable, ExpressibleByStringLiteral {
        /// The text, shown on one line.
        public var text: String
        /// Applied to the text when color is on.
        public var style: TextStyle

        /// A cell.
        ///
        /// - Parameters:
        ///   - text: The text, shown on one line.
        ///   - style: Applied to the text only, never to the padding.
        public init(_ text: String, style: TextStyle = []) {
            self.text = text
            self.style = style
        }

        public init(stringLiteral text: String) {
            self.init(text)
        }
    }

    /// The columns, left to right.
    public var columns: [Column]
    /// The rows, each with at most one cell per column; missing cells are empty.
    public private(set) var rows: [[Cell]] = []
    /// The index of the column that shrinks to fit a line width, if any.
    public var flexibleColumn: Int?
    /// What goes between two columns.
    public var separator = "  "
    /// Whether the first line is the headers.
    public var showsHeader = true
    /// How headers look when color is on.
    public var headerStyle: TextStyle = .bold

    /// An empty table.
    ///
    /// - Parameters:
    ///   - columns: The columns, left to right.
    ///   - flexibleColumn: The index of the column that gives way to a line width.
    public init(columns: [Column], flexibleColumn: Int? = nil) {
        self.columns = columns
        self.flexibleColumn = flexibleColumn
    }

    /// Adds a row of cells.
    ///
    /// - Parameter row: At most one cell per column. A longer row is a programming error.
    public mutating func append(_ row: [Cell]) {
        precondition(row.count <= columns.count, "a row of \(row.count) cells in a table of \(columns.count) columns")
        rows.append(row)
    }

    /// Adds a row of unstyled cells.
    ///
    /// - Parameter row: At most one text per column.
    public mutating func append(_ row: [String]) {
        append(row.map { Cell($0) })
    }

    /// Each column's width, in terminal columns: what a table printed in parts keeps for every
    /// part, so that rows printed later line up under the header printed first (`reel log`
    /// prints a page at a time, and `--follow` adds rows as they come).
    public struct Layout: Sendable, Hashable {
        /// One width per column; `Int.max` for a last column that takes whatever its cells need.
        public var widths: [Int]

        public init(widths: [Int]) {
            self.widths = widths
        }
    }

    /// The table as text: one line per row (after the header line), each ending in `\n`.
    ///
    /// - Parameters:
    ///   - styler: Styles headers and cells when enabled.
    ///   - lineWidth: The width lines should fit in, such as the terminal's; only the
    ///     ``flexibleColumn`` shrinks to meet it, so lines can still be wider.
    /// - Returns: The lines, or `""` when there is nothing to show.
    public func render(styler: Styler = .plain, lineWidth: Int? = nil) -> String {
        let lines = shownLines()
        return render(lines, widths: columnWidths(of: lines, lineWidth: lineWidth), styler: styler)
    }

    /// The widths to lay out these rows and the rows of later parts with: each column as wide as
    /// its widest cell or header, or `minimumWidths` where that is wider (room for the cells still
    /// to come: larger seqs, longer names). A ``flexibleColumn`` that is the last column and
    /// left-aligned takes the rest of `lineWidth` (later rows may be longer than these), or, with
    /// no line width, whatever its cells need; any other flexible column shrinks as in
    /// ``render(styler:lineWidth:)``.
    ///
    /// - Parameters:
    ///   - lineWidth: The width lines should fit in, such as the terminal's.
    ///   - minimumWidths: The least width of each column, by index; missing ones are 0.
    public func layout(lineWidth: Int? = nil, minimumWidths: [Int] = []) -> Layout {
        let lines = shownLines()
        var widths = columnWidths(of: lines, lineWidth: nil)
        for (index, minimum) in minimumWidths.enumerated() where widths.indices.contains(index) {
            widths[index] = max(widths[index], min(minimum, columns[index].maxWidth.map { max(1, $0) } ?? .max))
        }
        guard let flexible = flexibleColumn, widths.indices.contains(flexible) else { return Layout(widths: widths) }
        guard flexible == columns.count - 1, columns[flexible].alignment == .left else {
            return Layout(widths: shrinking(widths, toFit: lineWidth))
        }
        guard let lineWidth else {
            widths[flexible] = columns[flexible].maxWidth.map { max(1, $0) } ?? .max
            return Layout(widths: widths)
        }
        let others = widths.indices.filter { $0 != flexible }.reduce(0) { $0 + widths[$1] }
            + TerminalText.width(of: separator) * max(0, widths.count - 1)
        widths[flexible] = max(headerFloor(flexible), lineWidth - others)
        if let maxWidth = columns[flexible].maxWidth { widths[flexible] = min(widths[flexible], max(1, maxWidth)) }
        return Layout(widths: widths)
    }

    /// The rows (and the header, if shown) laid out with widths fixed before: cells wider than
    /// their column are cut with `…`, so every line keeps the columns of the first part.
    ///
    /// - Parameters:
    ///   - styler: Styles headers and cells when enabled.
    ///   - layout: Widths from ``layout(lineWidth:minimumWidths:)``, usually of the first part.
    public func render(styler: Styler = .plain, layout: Layout) -> String {
        precondition(layout.widths.count == columns.count, "a layout of \(layout.widths.count) widths for \(columns.count) columns")
        return render(shownLines(), widths: layout.widths, styler: styler)
    }

    /// The header (if shown) and the rows, each cell made one safe line, so widths measure what
    /// is shown.
    private func shownLines() -> [[Cell]] {
        var lines: [[Cell]] = showsHeader ? [columns.map { Cell($0.header, style: headerStyle) }] : []
        lines += rows
        return lines.map { row in
            row.map { Cell(Self.oneLine($0.text), style: $0.style) }
        }
    }

    private func render(_ lines: [[Cell]], widths: [Int], styler: Styler) -> String {
        var output = ""
        for row in lines {
            output += renderLine(row, widths: widths, styler: styler)
            output += "\n"
        }
        return output
    }

    private static func oneLine(_ text: String) -> String {
        var line = TerminalText.escapingControlCharacters(text)
        // An ASCII last byte answers without a walk back over grapheme clusters and a lookup of
        // Unicode properties (a fifth of listing a million actions): once control characters
        // are escaped, the only ASCII whitespace left is the space.
        while let last = line.utf8.last {
            if last < 0x80 {
                guard last == UInt8(ascii: " ") else { break }
            } else {
                guard line.last?.isWhitespace == true else { break }
            }
            line.removeLast()
        }
        return line
    }

    private func columnWidths(of lines: [[Cell]], lineWidth: Int?) -> [Int] {
        var widths = columns.map { column in column.maxWidth.map { max(1, $0) } ?? .max }
        var natural = Array(repeating: 0, count: columns.count)
        for row in lines {
            for (index, cell) in row.enumerated() {
                natural[index] = max(natural[index], TerminalText.width(of: cell.text))
            }
        }
        for index in widths.indices { widths[index] = min(widths[index], natural[index]) }
        return shrinking(widths, toFit: lineWidth)
    }

    /// `widths` with the flexible column narrowed, down to its header's width, until a line fits
    /// `lineWidth`.
    private func shrinking(_ widths: [Int], toFit lineWidth: Int?) -> [Int] {
        var widths = widths
        guard let lineWidth, let flexible = flexibleColumn, widths.indices.contains(flexible) else { return widths }
        let total = widths.reduce(0, +) + TerminalText.width(of: separator) * max(0, widths.count - 1)
        guard total > lineWidth else { return widths }
        let floor = min(widths[flexible], headerFloor(flexible))
        widths[flexible] = max(floor, widths[flexible] - (total - lineWidth))
        return widths
    }

    /// The least a flexible column shrinks to: its header's width (1 with no header).
    private func headerFloor(_ column: Int) -> Int {
        let header = showsHeader ? TerminalText.width(of: Self.oneLine(columns[column].header)) : 0
        return max(1, header)
    }

    private func renderLine(_ row: [Cell], widths: [Int], styler: Styler) -> String {
        // Cells after the last non-empty one add nothing but trailing spaces.
        guard let last = row.lastIndex(where: { !$0.text.isEmpty }) else { return "" }
        var line = ""
        for index in 0...last {
            if index > 0 { line += separator }
            let text = TerminalText.truncating(row[index].text, toWidth: widths[index])
            let styled = styler.apply(row[index].style, to: text)
            // Padding only where it shows: a last column of a fixed layout may be `Int.max` wide.
            var padding: String { String(repeating: " ", count: widths[index] - TerminalText.width(of: text)) }
            switch columns[index].alignment {
            case .left: line += index == last ? styled : styled + padding
            case .right: line += padding + styled
            }
        }
        return line
    }
}
