#if canImport(Glibc)
import Glibc
#endif
import ReelConsole
import ReelJSON

/// How a command prints: JSON lines for scripts (`--json`), or text for people, colored only
/// when the output is a terminal and `NO_COLOR` is not set. Results go to standard output;
/// notes and progress go to standard error, so a pipe receives only results.
struct Printer {
    let isJSON: Bool
    /// Styles for standard output (plain unless color is on for it).
    let style: Styler
    private let noteStyle: Styler
    private let output: any TextOutputSink
    private let errors: any TextOutputSink
    private let progressOutput: (any TextOutputSink)?
    /// The terminal's width, for tables that would wrap; `nil` when the output is not a terminal.
    private let lineWidth: Int?
    /// How many lines the terminal shows, when the output is one and its height is known.
    let terminalHeight: Int?
    /// Whether results go to a person's terminal (not `--json`): what pages long listings.
    let isTerminal: Bool

    init(context: ToolContext, json: Bool, color: ColorChoice) {
        isJSON = json
        let environment = { (name: String) in context.environment[name] }
        style = Styler(isEnabled: !json && color.usesColor(isTerminal: context.standardOutputIsTerminal, environment: environment))
        noteStyle = Styler(isEnabled: color.usesColor(isTerminal: context.standardErrorIsTerminal, environment: environment))
        output = context.standardOutput
        errors = context.standardError
        progressOutput = context.standardErrorIsTerminal ? context.standardError : nil
        lineWidth = context.standardOutputIsTerminal ? Self.terminalWidth(environment: context.environment) : nil
        terminalHeight = context.standardOutputIsTerminal ? Self.terminalHeight(environment: context.environment) : nil
        isTerminal = context.standardOutputIsTerminal && !json
    }

    /// One JSON value on one line.
    func json(_ value: JSONValue) {
        output.write(value.jsonString + "\n")
    }

    func line(_ text: String) {
        output.write(text + "\n")
    }

    /// Text written as is (already holding its newlines).
    func raw(_ text: String) {
        output.write(text)
    }

    /// A remark for the person, on standard error.
    func note(_ text: String) {
        errors.write(noteStyle.dim(text) + "\n")
    }

    /// A JSON document, indented, keys and values colored on a terminal.
    func document(_ value: JSONValue) {
        output.write(JSONPrettyPrinter(styler: style).format(value) + "\n")
    }

    /// A patch as one line per operation; `before` (the document the patch applies to) lets
    /// removals and replacements show the value they take away.
    func patch(_ patch: JSONPatch, before: JSONValue?, indent: String = "") {
        for line in PatchRenderer(styler: style).lines(for: patch, before: before) {
            output.write(indent + line + "\n")
        }
    }

    /// An aligned table; the last column gives way to the terminal's width.
    func table(_ headers: [String], rows: [[String]], rightAligned: Set<Int> = []) {
        output.write(Self.table(headers, rows: rows, rightAligned: rightAligned).render(styler: style, lineWidth: lineWidth))
    }

    /// A table printed in parts: the first part (with the header) fixes the columns' widths, at
    /// least `minimumWidths`, and every later part is laid out with the same widths, so its rows
    /// line up under the header (cells too wide for their column are cut with `…`). The last
    /// column takes the rest of the terminal's width, or all it needs when not on a terminal.
    /// Returns the layout to pass with the later parts.
    @discardableResult
    func tablePart(
        _ headers: [String], rows: [[String]], rightAligned: Set<Int> = [], layout: Table.Layout?, minimumWidths: [Int] = []
    ) -> Table.Layout {
        var table = Self.table(headers, rows: rows, rightAligned: rightAligned)
        table.showsHeader = layout == nil
        let fixed = layout ?? table.layout(lineWidth: lineWidth, minimumWidths: minimumWidths)
        output.write(table.render(styler: style, layout: fixed))
        return fixed
    }

    private static func table(_ headers: [String], rows: [[String]], rightAligned: Set<Int>) -> Table {
        var table = Table(
            columns: headers.enumerated().map { Table.Column($1, alignment: rightAligned.contains($0) ? .right : .left) },
            flexibleColumn: headers.count - 1
        )
        for row in rows { table.append(row) }
        return table
    }

    /// A progress bar on standard error when it is a terminal; otherwise one that does nothing.
    func progress(_ label: String, total: UInt64) -> ProgressBar {
        ProgressBar(total: total == 0 ? nil : Int(clamping: total), label: label, output: progressOutput)
    }

    /// `$LINES`, else the terminal's height, else `nil` (unknown).
    private static func terminalHeight(environment: [String: String]) -> Int? {
        if let lines = environment["LINES"].flatMap(Int.init), lines > 0 { return lines }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 { return Int(size.ws_row) }
        return nil
    }

    /// `$COLUMNS`, else the terminal's width, else 100.
    private static func terminalWidth(environment: [String: String]) -> Int {
        if let columns = environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 100
    }
}

extension ProgressBar {
    func update(_ done: UInt64) {
        update(completed: Int(clamping: done))
    }

    func update(_ done: UInt64, total: UInt64) {
        update(completed: Int(clamping: done), total: Int(clamping: total))
    }
}
