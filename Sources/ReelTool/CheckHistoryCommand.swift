import ArgumentParser
import ReelJSON
import ReelStore

/// `APP check-history --data-dir DIR`: whether this version's reducers read every action of a
/// stored history, before it is deployed on it.
struct CheckHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-history",
        abstract: "Check that this version's reducers read every action of a data directory's history.",
        discussion: """
            Folds the whole log with this program's reducers, each action upcast from the version \
            it was logged at, and lists every (type, version) the log holds with how many of its \
            actions fail and which: a type no reducer handles, a version newer than the reducers \
            read or without upcasters to the latest, an upcaster or a reducer refusing the \
            action. A daemon refuses to start on a log whose types or versions its reducers cannot \
            read; this also finds the actions they refuse one by one. Exit status 0 when every \
            action is read, 1 when not. With --json: {"readable", "actions", "types": [{"type", \
            "version", "actions", "failures", "seqs", "reasons", "problem"?}]}.
            """
    )

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp("The data directory whose history is checked (opened read-only).", valueName: "path"))
    var dataDir: String

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let printer = output.printer
        let context = ToolContext.current
        let progress = printer.progress("reading", total: 0)
        let check = try context.checkHistory(dataDir) { seq in progress.update(completed: Int(clamping: seq)) }
        progress.finish()
        if printer.isJSON {
            printer.json(["readable": .bool(check.readable), "actions": .int(Int64(check.actions)), "types": .array(check.entries.map(Self.json))])
        } else {
            let rows = check.entries.map { entry in
                [entry.type, String(entry.version), String(entry.actions), entry.readable ? "read" : "\(entry.failures) fail"]
            }
            printer.table(["TYPE", "VERSION", "ACTIONS", "RESULT"], rows: rows, rightAligned: [1, 2])
            for entry in check.entries where !entry.readable {
                let more = entry.failures > UInt64(entry.seqs.count) ? ", …" : ""
                printer.line("")
                printer.line("\(entry.type) version \(entry.version): \(entry.failures) of \(entry.actions) actions fail, at seqs \(entry.seqs.map(String.init).joined(separator: ", "))\(more)")
                for reason in entry.reasons { printer.line("  \(reason)") }
            }
            printer.line("")
            printer.line(
                check.readable
                    ? "\(context.reducer) reads all \(check.actions) actions"
                    : "\(context.reducer) cannot read \(check.entries.reduce(0) { $0 + $1.failures }) of \(check.actions) actions")
        }
        if !check.readable { throw ExitCode(ExitStatus.negative) }
    }

    /// One (type, version) of the `--json` answer.
    static func json(_ entry: HistoryCheck.Entry) -> JSONValue {
        var members: JSONObject = [:]
        members["type"] = .string(entry.type)
        members["version"] = .int(Int64(entry.version))
        members["actions"] = .int(Int64(entry.actions))
        members["failures"] = .int(Int64(entry.failures))
        members["seqs"] = .array(entry.seqs.map { .int(Int64($0)) })
        members["reasons"] = .array(entry.reasons.map(JSONValue.string))
        if let problem = entry.problem { members["problem"] = .string(problem) }
        return .object(members)
    }
}
