import Foundation
import ArgumentParser
import ReelJSON
import ReelProtocol

/// `reel get [PATH] [--at SEQ]`: the state or a slice, now or at a seq.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print the state or a slice of it, now or at a seq.",
        discussion: "PATH is a JSON Pointer such as /todos/0 (default: the whole state). With --json: {\"seq\", \"value\"}."
    )

    @Argument(help: ArgumentHelp("A JSON Pointer into the state, such as /todos/0.", valueName: "path"), transform: PointerArgument.parse)
    var path: PointerArgument?
    @Option(
        name: .customLong("at"), parsing: .unconditional, help: ArgumentHelp("The seq to read at (default: the latest).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var at: SeqArgument?
    @Option(name: .customLong("branch"), help: ArgumentHelp("Read this branch of the history instead of the main one.", valueName: "name"))
    var branch: String?
    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let read = try await store.value(at: at?.value, path: path?.pointer ?? .root, branch: branch)
        if printer.isJSON {
            printer.json(["seq": JSONValue(seq: read.seq), "value": read.value])
        } else {
            printer.document(read.value)
        }
    }
}

/// `reel diff FROM TO [PATH]`: what changed between two seqs.
struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Show what changed between two seqs, or between a branch and the main history.",
        discussion: """
            With --branch NAME and two seqs: between two states of the branch. With --branch NAME \
            alone: from the main history's latest state to the branch's latest (what the branch \
            did differently); with --branch A --branch B: from A's latest to B's. With --json: \
            {"patch": [RFC 6902 operations]} turning the first state into the second.
            """
    )

    @Argument(help: ArgumentHelp("The earlier seq.", valueName: "from"), transform: SeqArgument.parse) var from: SeqArgument?
    @Argument(help: ArgumentHelp("The later seq.", valueName: "to"), transform: SeqArgument.parse) var to: SeqArgument?
    @Argument(help: ArgumentHelp("Only under this JSON Pointer.", valueName: "path"), transform: PointerArgument.parse) var path: PointerArgument?
    @Option(name: .customLong("branch"), help: ArgumentHelp("A branch of the history (twice: compare two branches).", valueName: "name"))
    var branches: [String] = []
    @OptionGroup var source: SourceOptions

    func validate() throws {
        guard branches.count <= 2 else { throw ValidationError("--branch is given at most twice: two branches compared") }
        if branches.isEmpty || branches.count == 2 || from != nil {
            // (Worded as argument-parser words a missing argument: a negative seq read as an
            // option lands here, and is then explained as such.)
            guard (from == nil) == (to == nil) else { throw ValidationError("Missing expected argument '<to>'") }
        }
        if branches.isEmpty, from == nil {
            throw ValidationError("Missing expected argument '<from>' (or give --branch NAME to compare a branch with the main history)")
        }
        if branches.count == 2, from != nil { throw ValidationError("two branches are compared at their latest seqs: give no seqs") }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let pointer = path?.pointer ?? .root
        // The first state (seq, branch: nil for the main history) and the second.
        let (start, end, first, second): (UInt64, UInt64, String?, String?)
        switch (branches.count, from, to) {
        case (0, let from?, let to?):
            (start, end, first, second) = (from.value, to.value, nil, nil)
        case (1, let from?, let to?):
            (start, end, first, second) = (from.value, to.value, branches[0], branches[0])
        case (1, _, _):
            // From the main history's latest state to the branch's latest.
            (start, end, first, second) = (try await store.latestSeq(), try await store.latestSeq(ofBranch: branches[0]), nil, branches[0])
        default:
            (start, end, first, second) = (
                try await store.latestSeq(ofBranch: branches[0]), try await store.latestSeq(ofBranch: branches[1]), branches[0], branches[1]
            )
        }
        let patch = try await store.diff(from: start, to: end, path: pointer, branch: first, toBranch: second == first ? nil : second)
        let describe = { (seq: UInt64, branch: String?) in branch.map { "seq \(seq) of branch \($0)" } ?? "seq \(seq)" }
        if printer.isJSON {
            printer.json(["patch": patch.jsonValue])
            return
        }
        guard !patch.operations.isEmpty else {
            printer.line("no change between \(describe(start, first)) and \(describe(end, second))")
            return
        }
        // The state at FROM lets removals and replacements show what they took away.
        let before = try? await store.value(at: start, path: .root, branch: first).value
        printer.patch(patch, before: before)
    }
}

/// `reel replay --skip SEQ[,SEQ…] [--to SEQ] [PATH]`: what the state would be without some actions.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Show what the state would be without some actions (the log is not touched).",
        discussion: """
            Replays the log leaving out the skipped actions. Later actions that the reducers refuse \
            once those are gone are reported (they change nothing). With --diff, prints how the \
            what-if state differs from the real one instead of the state itself. A skipped seq \
            beyond the latest (or beyond --to) is refused, as `get --at` refuses it. With --json: \
            {"value", "refused": [{seq, reason}]}, or {"patch", "refused"} with --diff; "refused" \
            is [] when every later action still applies.
            """
    )

    @Option(name: .customLong("skip"), parsing: .unconditional, help: ArgumentHelp("Seqs to leave out, comma-separated.", valueName: "seq,…"))
    var skip: String
    @Option(
        name: .customLong("to"), parsing: .unconditional, help: ArgumentHelp("Replay up to this seq (default: the latest).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var to: SeqArgument?
    @Flag(name: .customLong("diff"), help: "Show the difference from the real state at the same seq.") var diff = false
    @Argument(help: ArgumentHelp("Only this JSON Pointer.", valueName: "path"), transform: PointerArgument.parse) var path: PointerArgument?
    @OptionGroup var source: SourceOptions

    func validate() throws {
        _ = try skipped()
    }

    private func skipped() throws -> Set<UInt64> {
        var seqs: Set<UInt64> = []
        for part in skip.split(separator: ",", omittingEmptySubsequences: false) {
            guard let seq = UInt64(part.trimmingCharacters(in: .whitespaces)), seq > 0 else {
                throw ValidationError("--skip takes seqs (positive integers) separated by commas, such as 12,15; '\(part)' is not one")
            }
            seqs.insert(seq)
        }
        return seqs
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let pointer = path?.pointer ?? .root
        // One seq for both sides, even if the daemon commits more meanwhile.
        let at: UInt64
        if let to { at = to.value } else { at = try await store.latestSeq() }
        let skipped = try skipped()
        // Skipping a seq the replay never reaches would change nothing: say so, as `get --at` does.
        if let beyond = skipped.max(), beyond > at {
            let end = to == nil ? "the latest seq \(at)" : "seq \(at) (--to), where the replay ends"
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(beyond) is beyond \(end)"))
        }
        let whatIf = try await store.replay(to: at, skip: skipped, path: pointer)
        if diff {
            let real = try await store.value(at: at, path: pointer)
            let patch = JSONPatch(from: real.value, to: whatIf.value).prefixed(with: pointer)
            if printer.isJSON {
                printer.json(["patch": patch.jsonValue, "refused": .array(whatIf.refused.map(\.asJSON))])
            } else if patch.operations.isEmpty {
                printer.line("no difference: without those actions the state at seq \(real.seq) is the same")
            } else {
                printer.line(printer.style.bold("without seq \(skip), the state at seq \(real.seq) would differ:"))
                printer.patch(patch, before: real.value.wrapped(at: pointer))
            }
        } else if printer.isJSON {
            // "refused" always, as with --diff: a script reads the same members either way.
            printer.json(["value": whatIf.value, "refused": .array(whatIf.refused.map(\.asJSON))])
        } else {
            printer.document(whatIf.value)
        }
        if !printer.isJSON {
            for refusal in whatIf.refused {
                printer.note("seq \(refusal.seq) would be refused without the skipped actions: \(refusal.reason)")
            }
        }
    }
}

extension JSONValue {
    /// This value placed at `pointer` in an otherwise empty document, so that a patch with
    /// absolute paths can look up what it replaces.
    func wrapped(at pointer: JSONPointer) -> JSONValue {
        var document = self
        for token in pointer.tokens.reversed() {
            document = .object([token: document])
        }
        return document
    }
}
