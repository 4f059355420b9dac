import ReelJSON
import ReelProtocol

/// `reel stats` for people: the figures in groups, sizes in KiB/MiB, latencies as percentiles in
/// one row each. (`--json` prints the result as it came.)
enum StatsPresentation {
    /// The rows of the FIGURE / VALUE table.
    static func rows(_ stats: StatsResult) -> [[String]] {
        var rows: [[String]] = []
        func add(_ name: String, _ value: String?) { if let value { rows.append([name, value]) } }

        add("seq", "\(stats.seq)")
        add("reducer", stats.reducer)
        add("format version", stats.formatVersion)
        add("created", stats.created?.rfc3339Seconds)
        add("starts after", stats.origin.map { "seq \($0) (made from a bundle: nothing before it is held)" })
        add("map", stats.mapUsed.map { used in
            "\(bytes(Int(used))) used of \(stats.mapSize.map { bytes(Int($0)) } ?? "?")"
        } ?? stats.mapSize.map { bytes(Int($0)) })
        add("reader slots", stats.readerSlotsUsed.map { "\($0) used of \(stats.maxReaders.map(String.init) ?? "?")" })
        add("change index", stats.changeIndexThrough.map { through in
            (through == stats.seq ? "up to date" : "through seq \(through)")
                + (stats.changeIndexBytes.map { ", \(bytes(Int($0)))" } ?? "")
        })
        add("take-over", stats.takeOver.map { "\($0.reducer) preparing: " + TakeOverProgressReport.describe($0) })
        add("checkpoints", stats.checkpoints.map(String.init))
        add("last checkpoint", stats.lastCheckpointSeq.map { seq in
            "seq \(seq)" + (stats.lastCheckpointTime.map { ", \($0.rfc3339Seconds)" } ?? "")
        })
        add("opened in", stats.openSeconds.map { seconds in
            "\(duration(seconds))" + (stats.replayedAtOpen.map { ", \($0) actions replayed" } ?? "")
                + (stats.restoredFromCheckpoint.map { " after the checkpoint at \($0)" } ?? "")
        })
        add("commits", stats.commits.map(String.init))
        add("actions committed", stats.actionsCommitted.map(String.init))
        add("commit latency", stats.commitMicros.map(latencies))
        add("sync latency", stats.syncMicros.map(latencies))
        add("actions per commit", stats.actionsPerCommit.map { counts($0) + " (largest \(stats.largestCommit.map(String.init) ?? "?"))" })
        add("LMDB commits", stats.lmdbCommitMicros.map(latencies))
        add("journal backlog", stats.journalBacklogBytes.map { bytes(Int($0)) + " not yet in LMDB" })
        add("dispatches refused", stats.dispatchesRefused.map { refused in
            let byCode = (stats.refusedByCode ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            return "\(refused)" + (byCode.isEmpty ? "" : " (by code \(byCode.joined(separator: ", ")))")
        })
        add("duplicates", stats.duplicates.map(String.init))
        add("commit failures", stats.commitFailures.map(String.init))
        add("checkpoints written", stats.checkpointsWritten.map(String.init))
        add("connections", stats.connections.map(String.init))
        add("subscriptions", stats.subscriptions.map { byMode($0.mapValues(UInt64.init)) })
        add("subscription lag (seqs)", stats.subscriptionLag.map(byMode))
        if let shared = stats.sharedLog {
            add("shared log", shared.location)
            add("shared log standing", sharedLogStanding(shared))
            add("shared log traffic", shared.followed.map { followed in
                "\(followed) actions followed, \(shared.conflicts ?? 0) conflicts"
                    + (shared.lastAppendMicros.map { ", last append \(micros(UInt64(max(0, $0))))" } ?? "")
            })
        }
        for key in stats.other.keys.sorted() {
            add(key, stats.other[key].map { $0.stringValue ?? $0.jsonString })
        }
        return rows
    }

    private static func sharedLogStanding(_ report: SharedLogReport) -> String {
        if let refusal = report.refusal { return "REFUSING: \(refusal)" }
        let standing = "latest seq \(report.latestSeq), this node \(report.lag) behind"
        switch report.reachable {
        case true?: return "reachable, " + standing
        case false?: return "UNREACHABLE (\(report.error ?? "no answer")), " + standing + " as last known"
        case nil: return "not reached yet"
        }
    }

    private static func latencies(_ distribution: StatsResult.Distribution) -> String {
        guard distribution.count > 0 else { return "none yet" }
        let figures = [("p50", distribution.p50), ("p90", distribution.p90), ("p99", distribution.p99),
                       ("p99.9", distribution.p999), ("max", distribution.max)]
        return figures.map { "\($0.0) \(micros($0.1))" }.joined(separator: "  ") + "  (\(distribution.count))"
    }

    private static func counts(_ distribution: StatsResult.Distribution) -> String {
        guard distribution.count > 0 else { return "none yet" }
        return "p50 \(distribution.p50)  p99 \(distribution.p99)  max \(distribution.max)"
    }

    private static func byMode(_ figures: [String: UInt64]) -> String {
        ["value", "patch", "actions"].map { "\($0) \(figures[$0] ?? 0)" }.joined(separator: ", ")
    }

    /// 850 µs, 1.2 ms, 3.4 s.
    static func micros(_ value: UInt64) -> String {
        if value < 1_000 { return "\(value) µs" }
        if value < 1_000_000 { return decimal(Double(value) / 1_000) + " ms" }
        return decimal(Double(value) / 1_000_000) + " s"
    }

    private static func duration(_ seconds: Double) -> String {
        micros(UInt64(max(0, seconds * 1_000_000).rounded()))
    }

    /// 512 B, 48 KiB, 1.5 MiB.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return (unit == 0 ? "\(count)" : decimal(value)) + " " + units[unit]
    }

    /// Three significant digits at most, no trailing zeros: 1.25, 12.5, 125.
    private static func decimal(_ value: Double) -> String {
        let digits = value < 10 ? 2 : value < 100 ? 1 : 0
        var text = String(Int((value * pow10(digits)).rounded()))
        guard digits > 0 else { return text }
        while text.count <= digits { text = "0" + text }
        text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    private static func pow10(_ digits: Int) -> Double {
        (0..<digits).reduce(1) { value, _ in value * 10 }
    }
}
