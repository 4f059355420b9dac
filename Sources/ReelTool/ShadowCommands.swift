import ArgumentParser
import Foundation
import ReelCore
import ReelJSON
import ReelStorage

/// `APP shadow --baseline OLD_APP --data-dir DIR [PATH…]`: what this version's reducers do to the
/// stored history, against another version's, before it is deployed.
struct ShadowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shadow",
        abstract:
            "Replay the history under this version and a baseline side by side, and say where the states part.",
        discussion: """
            Folds the data directory's whole log with this program's reducers and, in a process of \
            its own, with the baseline's (BASELINE shadow-worker: any app built with ReelApp, such \
            as the version that wrote the history), and compares each top-level part of the state \
            (or each PATH) at the data directory's checkpoints, at least every --every actions; \
            where a part first differs, both go through that \
            interval again action by action to name the first seq, its action and the difference \
            (baseline → this version). Where the data directory holds the baseline's own \
            checkpoints (its reducers' name and version), they stand for its replay: this version \
            alone folds the intervals between them, on every core, as far as they agree. A difference that comes and goes within one interval is \
            not seen: --every 1 compares after every action. Also lists every action one version \
            refuses and the other accepts. Exit status 0 when everything is the same, 1 when not. \
            With --json: {"same", "actions", "parts": [{"path", "same", "seq"?, "action"?, \
            "patch"?}], "refusedByThisOnly", "refusedByBaselineOnly", \
            "baselineCheckpointsThrough"?}.
            """
    )

    @Option(
        name: .customLong("baseline"),
        help: ArgumentHelp(
            "The other version's executable (an app built with ReelApp).", valueName: "path"))
    var baseline: String

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp(
            "The data directory whose history is replayed (opened read-only).", valueName: "path"))
    var dataDir: String

    @Option(
        name: .customLong("every"),
        help: ArgumentHelp("Compare the versions every this many actions.", valueName: "n"))
    var every: UInt64 = 10_000

    @Option(
        name: .customLong("ignore"),
        help: ArgumentHelp(
            "Leave out a top-level part that is meant to change (repeat for more).", valueName: "path"))
    var ignore: [String] = []

    @Argument(
        help: ArgumentHelp("Compare these parts instead of each top-level one.", valueName: "path"))
    var paths: [String] = []

    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard every >= 1 else { throw ValidationError("--every takes a count of at least 1") }
    }

    func run() async throws {
        let printer = output.printer
        let parts = try paths.map { try JSONPointer($0) }
        let ignored = Set(try ignore.map { try JSONPointer($0).description })
        let context = ToolContext.current
        let mine = try context.openShadow(dataDir)
        let latest = try mine.latestSeq()
        let theirs = try ProcessShadowSide(executable: baseline, dataDirectory: dataDir)
        let progress = printer.progress("replaying", total: latest)
        defer { progress.finish() }

        var firstDifferences: [String: UInt64] = [:]
        var refusedByThisOnly: [UInt64] = []
        var refusedByBaselineOnly: [UInt64] = []
        var seq: UInt64 = 0
        var allParts = Set<String>()
        // Through the baseline's own checkpoints first, where it has them: only this version folds.
        let checkpoints = try mine.checkpoints()
        let schedule = ShadowCheckpointPass.schedule(latest: latest, every: every, checkpoints: checkpoints.map(\.seq))
        let pass = try ShadowCheckpointPass.run(
            mine: mine, theirs: theirs, schedule: schedule, checkpoints: checkpoints, paths: parts, ignored: ignored,
            progress: { progress.update($0) }
        )
        if let pass, pass.agreedThrough > 0 {
            refusedByThisOnly = pass.refusedByThisOnly.sorted()
            allParts = pass.parts
            seq = pass.agreedThrough
            try mine.restore(fromCheckpointAt: seq, sameReducers: false)
            try theirs.restore(fromCheckpointAt: seq, sameReducers: true)
        }
        for end in schedule where end > seq {
            // The baseline folds in its process while this one folds here.
            try theirs.startAdvance(through: end)
            let refusedHere = Set(try mine.advance(through: end))
            let refusedThere = Set(try theirs.finishAdvance())
            refusedByThisOnly += refusedHere.subtracting(refusedThere).sorted()
            refusedByBaselineOnly += refusedThere.subtracting(refusedHere).sorted()
            // The baseline's first: it says how it digests (an older one only canonically).
            let (digest, there) = try theirs.digests(parts, by: .structural)
            let here = try mine.digests(parts, by: digest).1
            let keys = Set(here.keys).union(there.keys).subtracting(ignored)
            allParts.formUnion(keys)
            let parting = keys.filter { here[$0] != there[$0] && firstDifferences[$0] == nil }
            if !parting.isEmpty {
                // Through the interval again, action by action, for the parts that parted in it.
                try mine.rewind()
                try theirs.rewind()
                var pending = Set(parting)
                let pointers = try pending.map { try JSONPointer($0) }
                for step in (seq + 1)...end where !pending.isEmpty {
                    _ = try mine.step()
                    _ = try theirs.step()
                    let thereNow = try theirs.digests(pointers, by: digest).1
                    let hereNow = try mine.digests(pointers, by: digest).1
                    for part in pending where hereNow[part] != thereNow[part] {
                        firstDifferences[part] = step
                        pending.remove(part)
                    }
                }
                // Both back at the interval's end.
                try mine.rewind()
                try theirs.rewind()
                _ = try mine.advance(through: end)
                _ = try theirs.advance(through: end)
            }
            seq = end
            progress.update(seq)
        }
        progress.finish()

        // Each part that parted: its action, and the difference there.
        var report: [(path: String, seq: UInt64?, action: ActionEnvelope?, patch: JSONPatch?, before: JSONValue?)] =
            []
        var bySeq: [UInt64: [String]] = [:]
        for (part, at) in firstDifferences { bySeq[at, default: []].append(part) }
        var details: [String: (ActionEnvelope?, JSONPatch, JSONValue?)] = [:]
        if !bySeq.isEmpty {
            // Every part parted after the checkpoint the pass reached: both start there again.
            if let base = pass?.agreedThrough, base > 0 {
                try mine.restore(fromCheckpointAt: base, sameReducers: false)
                try theirs.restore(fromCheckpointAt: base, sameReducers: true)
            } else {
                try mine.restart()
                try theirs.restart()
            }
            for at in bySeq.keys.sorted() {
                let names = bySeq[at]!
                _ = try mine.advance(through: at)
                _ = try theirs.advance(through: at)
                let pointers = try names.map { try JSONPointer($0) }
                let here = try mine.values(pointers)
                let there = try theirs.values(pointers)
                let action = try mine.envelope(at: at)
                for name in names {
                    // Absolute paths, as `diff` gives them; a part absent on one side is null there.
                    let path = try JSONPointer(name)
                    let patch = JSONPatch(from: there[name] ?? .null, to: here[name] ?? .null).prefixed(with: path)
                    details[name] = (action, patch, Self.document(holding: there[name] ?? .null, at: path))
                }
            }
        }
        for part in allParts.sorted() {
            if let at = firstDifferences[part], let detail = details[part] {
                report.append((part, at, detail.0, detail.1, detail.2))
            } else {
                report.append((part, nil, nil, nil, nil))
            }
        }
        let same =
            firstDifferences.isEmpty && refusedByThisOnly.isEmpty && refusedByBaselineOnly.isEmpty

        let checkpointsThrough = pass?.agreedThrough ?? 0
        if printer.isJSON {
            var result: JSONValue = [
                "same": .bool(same), "actions": .int(Int64(latest)),
                "parts": .array(
                    report.map { entry in
                        var members: JSONObject = [
                            "path": .string(entry.path), "same": .bool(entry.seq == nil),
                        ]
                        if let at = entry.seq { members["seq"] = .int(Int64(at)) }
                        if let action = entry.action {
                            members["action"] = ["type": .string(action.type), "payload": action.payload]
                        }
                        if let patch = entry.patch { members["patch"] = patch.jsonValue }
                        return .object(members)
                    }),
                "refusedByThisOnly": .array(refusedByThisOnly.map { .int(Int64($0)) }),
                "refusedByBaselineOnly": .array(refusedByBaselineOnly.map { .int(Int64($0)) }),
            ]
            if checkpointsThrough > 0, case .object(var members) = result {
                members["baselineCheckpointsThrough"] = .int(Int64(checkpointsThrough))
                result = .object(members)
            }
            printer.json(result)
        } else {
            if checkpointsThrough > 0 {
                printer.note("through seq \(checkpointsThrough) the baseline's own checkpoints stood for its replay: this version alone folded that far")
            }
            for entry in report {
                guard let at = entry.seq else {
                    printer.line("\(entry.path.isEmpty ? "(root)" : entry.path)  same")
                    continue
                }
                let action = entry.action.map { " \($0.type) \($0.payload.jsonString)" } ?? ""
                printer.line(
                    "\(entry.path.isEmpty ? "(root)" : entry.path)  differs from seq \(at):\(action)")
                if let patch = entry.patch { printer.patch(patch, before: entry.before, indent: "  ") }
            }
            if !refusedByThisOnly.isEmpty {
                printer.line(
                    "refused by this version only: "
                        + refusedByThisOnly.map(String.init).joined(separator: ", "))
            }
            if !refusedByBaselineOnly.isEmpty {
                printer.line(
                    "refused by the baseline only: "
                        + refusedByBaselineOnly.map(String.init).joined(separator: ", "))
            }
            printer.line(same ? "the same over \(latest) actions" : "not the same over \(latest) actions")
        }
        if !same { throw ExitCode(ExitStatus.negative) }
    }
}

extension ShadowCommand {
    /// A document with `value` at `path` (objects on the way), for showing what a patch with
    /// absolute paths replaces.
    static func document(holding value: JSONValue, at path: JSONPointer) -> JSONValue {
        path.tokens.reversed().reduce(value) { inner, token in .object([token: inner]) }
    }
}

/// `APP shadow-worker --data-dir DIR`: the baseline's side of `shadow`, answering its requests on
/// standard input, one JSON value per line.
struct ShadowWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shadow-worker",
        abstract: "The baseline's side of another version's `shadow` (not for people).",
        shouldDisplay: false
    )

    @Option(name: .customLong("data-dir"))
    var dataDir: String

    func run() throws {
        let side = try ToolContext.current.openShadow(dataDir)
        let out = FileHandle.standardOutput
        while let line = readLine() {
            let answer: JSONValue
            if let request = try? JSONValue(parsing: line) {
                answer = side.answer(request)
            } else {
                answer = ["error": "a request that is not JSON"]
            }
            try out.write(contentsOf: Data((answer.jsonString + "\n").utf8))
        }
    }
}
