/// The text of one progress bar redraw, as a pure function of the figures, so that it can be
/// tested without a clock.
///
/// With a known total:
/// ```
/// verify [=========>          ]   4520/10000   45%  1.2k/s  ETA 0:04
/// ```
/// With an unknown one (no bar, percentage or ETA):
/// ```
/// export   4520  1.2k/s
/// ```
/// The done count is padded to the width of the total so the line does not jitter.
struct ProgressLine: Sendable, Equatable {
    var label: String
    var completed: Int
    var total: Int?
    var elapsed: Duration

    /// Columns of the bar between its brackets.
    static let barWidth = 20
    /// Labels are cut to this many columns, to keep the line on one row of a narrow terminal.
    static let labelWidth = 24

    var text: String {
        var fields: [String] = []
        let label = TerminalText.truncating(TerminalText.escapingControlCharacters(label), toWidth: Self.labelWidth)
        let rate = Self.rate(completed: completed, elapsed: elapsed)
        if let total, total >= 0 {
            fields.append("[\(Self.bar(completed: completed, total: total))]")
            let done = String(completed)
            let totalText = String(total)
            fields.append(String(repeating: " ", count: max(0, totalText.count - done.count)) + done + "/" + totalText)
            let percent = total == 0 ? 100 : Int(min(100, max(0, Double(completed) / Double(total) * 100)))
            fields.append((percent < 10 ? "  " : percent < 100 ? " " : "") + "\(percent)%")
            fields.append("\(Self.formatRate(rate))/s")
            fields.append("ETA \(Self.eta(remaining: total - completed, rate: rate))")
        } else {
            fields.append(String(completed))
            fields.append("\(Self.formatRate(rate))/s")
        }
        return (label.isEmpty ? "" : label + " ") + fields.joined(separator: "  ")
    }

    /// `=` for what is done, `>` at the edge, spaces for the rest.
    static func bar(completed: Int, total: Int) -> String {
        let filled = total == 0 ? barWidth : Int(Double(barWidth) * min(1, max(0, Double(completed) / Double(total))))
        if filled >= barWidth { return String(repeating: "=", count: barWidth) }
        return String(repeating: "=", count: filled) + ">" + String(repeating: " ", count: barWidth - filled - 1)
    }

    /// Items per second since the start.
    static func rate(completed: Int, elapsed: Duration) -> Double {
        let seconds = elapsed.seconds
        return seconds > 0 ? Double(completed) / seconds : 0
    }

    /// `7.5`, `950`, `12.3k`, `4.0M`: at most four digits and a unit.
    static func formatRate(_ rate: Double) -> String {
        guard rate.isFinite, rate >= 0 else { return "0" }
        if rate < 10 { return oneDecimal(rate) }
        if rate < 999.5 { return String(Int(rate.rounded())) }
        for (unit, scale) in [("k", 1e3), ("M", 1e6), ("G", 1e9)] where rate / scale < 999.95 {
            return oneDecimal(rate / scale) + unit
        }
        return oneDecimal(rate / 1e12) + "T"
    }

    /// `m:ss`, or `h:mm:ss` from an hour; `--:--` when the rate says nothing yet.
    static func eta(remaining: Int, rate: Double) -> String {
        guard remaining > 0 else { return "0:00" }
        guard rate > 0, case let seconds = Double(remaining) / rate, seconds < 360_000 else { return "--:--" }
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigits = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" : "\(minutes):\(twoDigits(secs))"
    }

    /// `x` with one decimal, without Foundation's formatter.
    private static func oneDecimal(_ x: Double) -> String {
        let tenths = Int((x * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
