import ArgumentParser
import ReelJSON
import ReelProtocol

/// `reel bisect EXPR`: the first seq at which a condition on the state holds.
struct BisectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bisect", abstract: "Find the first seq at which a condition on the state holds.",
        discussion: """
            EXPR is a JSON Pointer, a comparison and a JSON value, or exists/missing and a pointer:
              '/character/hp <= 0'   '/status == "done"'   'exists /todos/3'   'missing /session'
            Operators: == != < <= > >=. Numbers compare as numbers, strings by Unicode scalars; \
            == and != compare any JSON values; an ordering between different types, or with \
            nothing at the pointer, is false. See docs/TIME-TRAVEL.md.
            Like git bisect, the search assumes that once the condition holds it keeps holding; \
            it evaluates O(log n) states, loading checkpoints rather than replaying where it can. \
            With --to SEQ, searches up to SEQ (for a condition that stopped holding later, after a \
            fix or a revert). Exits 1 when the condition does not hold at the last seq searched. \
            With --json: {"seq": first seq or null, "latest": the last seq searched, "probes"}.
            """
    )

    @Argument(help: ArgumentHelp("The condition, such as '/character/hp <= 0'.", valueName: "expr")) var expression: String
    @Option(
        name: .customLong("to"), parsing: .unconditional, help: ArgumentHelp("Search up to this seq (default: the latest).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var to: SeqArgument?
    @OptionGroup var source: SourceOptions

    func validate() throws {
        _ = try parsedCondition(expression)
    }

    func run() async throws {
        let printer = source.output.printer
        let condition = try parsedCondition(expression)  // (checked by validate)
        let store = try await source.open()
        let progress = printer.progress("bisecting", total: 0)
        let answer: BisectAnswer
        do {
            defer { progress.finish() }
            answer = try await store.bisect(condition, through: to?.value) { done, estimate in
                progress.update(UInt64(done), total: UInt64(estimate))
            }
        }
        if printer.isJSON {
            printer.json(["seq": answer.seq.map { JSONValue(seq: $0) } ?? .null, "latest": JSONValue(seq: answer.latest), "probes": .int(Int64(answer.probes))])
        } else if let seq = answer.seq {
            if seq == 0 {
                printer.line("\(condition) holds in the initial state (seq 0)")
            } else {
                printer.line("first seq where \(condition) holds: \(printer.style.bold(String(seq)))")
                let page = try await store.history(from: seq, to: seq, limit: 1, types: nil)
                if let envelope = page.actions.first {
                    printer.line("  \(envelope.time.rfc3339)  \(printer.style.bold(envelope.type))  \(envelope.payload.jsonString)")
                    printer.line(printer.style.dim("  see what it changed: \(ToolContext.current.programName) show \(seq)"))
                }
            }
            printer.note("\(answer.probes) states evaluated over \(answer.latest) actions")
        } else {
            let place = to == nil ? "the latest seq (\(answer.latest))" : "seq \(answer.latest)"
            printer.line("\(condition) does not hold at \(place)")
        }
        if answer.seq == nil { throw ExitCode(ExitStatus.negative) }
    }
}

/// `reel verify`: replay the whole log and compare with every checkpoint.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check every record, replay the whole log and compare it with every checkpoint.",
        discussion: """
            First reads every stored record and checks its checksum: each damaged action, \
            checkpoint or idempotency key is reported (by seq or key) and verify exits 1; a \
            damaged log is not replayed. Then replays from the initial state, one checkpoint \
            interval at a time, and compares the state with each checkpoint of the current \
            reducer. Stops at the first difference, shows it, and exits 1; also exits 1 when the \
            reducers refuse a logged action. With --json: {"ok", "actions", "checkpoints", \
            "skipped", "refused", "damaged", "mismatch"?}.
            """
    )

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        // The integrity scan runs beside the replay, not before it (one thread reading every
        // record was a seventh of verifying a million actions on two cores). A damaged log is
        // still never reported as replayed: the scan's verdict is taken before anything the
        // replay found or threw.
        async let scanned = store.scan()
        let replayed: Result<Replayed, any Error>
        do {
            replayed = .success(try await replay(store, printer))
        } catch {
            replayed = .failure(error)
        }
        let scan = try await scanned
        if scan.damaged.contains(where: \.isLogDamage) {
            reportDamage(printer, scan)
            throw ExitCode(ExitStatus.negative)
        }
        let outcome = try replayed.get()
        let ok = outcome.mismatch == nil && outcome.refused.isEmpty && scan.damaged.isEmpty
        if printer.isJSON {
            var result: JSONObject = [
                "ok": .bool(ok), "actions": JSONValue(seq: outcome.mismatch?.seq ?? outcome.latest),
                "checkpoints": .array(outcome.matched.map { JSONValue(seq: $0) }),
                "skipped": .array(outcome.skipped.map(\.asJSON)), "refused": .array(outcome.refused.map(\.asJSON)),
                "damaged": .array(scan.damaged.map(\.asJSON)),
            ]
            if let mismatch = outcome.mismatch {
                result["mismatch"] = [
                    "seq": JSONValue(seq: mismatch.seq), "reason": .string(mismatch.reason), "patch": mismatch.patch.jsonValue,
                    "checkpointHash": .string(mismatch.checkpointHash), "replayedHash": .string(mismatch.replayedHash),
                ]
            }
            printer.json(.object(result))
        } else {
            reportDamage(printer, scan)
            report(printer, outcome)
        }
        if !ok { throw ExitCode(ExitStatus.negative) }
    }

    /// What the replay found: the checkpoints it matched, passed over or stopped at, and the
    /// actions the reducers refused.
    private struct Replayed {
        var latest: UInt64 = 0
        /// How many actions the history holds after its origin.
        var actions: UInt64 = 0
        var matched: [UInt64] = []
        var skipped: [SeqReason] = []
        var refused: [SeqReason] = []
        var mismatch: VerifyOutcome.Mismatch?
    }

    /// Replays the history one checkpoint interval at a time, several at once, with a progress bar.
    private func replay(_ store: any StoreSource, _ printer: Printer) async throws -> Replayed {
        var outcome = Replayed()
        outcome.latest = try await store.latestSeq()
        let reducer = try await store.reducer()
        // A directory made from a bundle starts from the state at its origin, trusted as the
        // initial state is: its checkpoint there is not compared with anything.
        let origin = try await store.stats().origin ?? 0
        outcome.actions = outcome.latest - origin
        let checkpoints = try await store.checkpoints().filter { $0.seq > origin }
        // Segments end at each checkpoint of this reducer, then at the latest seq.
        var ends = checkpoints.filter { $0.reducer == reducer && $0.seq <= outcome.latest && $0.seq > 0 }.map(\.seq)
        if ends.last != outcome.latest { ends.append(outcome.latest) }
        let progress = printer.progress("verifying", total: outcome.actions)
        defer { progress.finish() }
        outcome.skipped = checkpoints.filter { $0.reducer != reducer }.map {
            SeqReason(seq: $0.seq, reason: "made by reducer \($0.reducer), not \(reducer)")
        }
        try await VerifySegments(ends: ends).run(on: store) { end, segment in
            outcome.matched += segment.matched
            outcome.refused += segment.refused
            outcome.skipped += segment.skipped.filter { skip in !outcome.skipped.contains { $0.seq == skip.seq } }
            progress.update(end - origin)
            outcome.mismatch = segment.mismatch
            return segment.mismatch == nil
        }
        return outcome
    }

    /// Every damaged record the scan found; with `--json`, the whole verdict when the log is
    /// damaged (nothing was replayed).
    private func reportDamage(_ printer: Printer, _ scan: ScanOutcome) {
        if printer.isJSON {
            guard scan.damaged.contains(where: \.isLogDamage) else { return }
            printer.json([
                "ok": false, "actions": JSONValue(seq: scan.actions), "checkpoints": [], "skipped": [], "refused": [],
                "damaged": .array(scan.damaged.map(\.asJSON)),
            ])
            return
        }
        let style = printer.style
        for damage in scan.damaged {
            printer.line(style.red(damage.reason))
        }
        if scan.damaged.contains(where: \.isLogDamage) {
            var seqs: [UInt64] = []
            for damage in scan.damaged where damage.isLogDamage { if let seq = damage.seq, !seqs.contains(seq) { seqs.append(seq) } }
            printer.line(style.red(style.bold(
                "the log is damaged (\(seqs.isEmpty ? "see above" : "seq " + seqs.map(String.init).joined(separator: ", "))): "
                    + "not replayed; restore from a backup"
            )))
        }
    }

    private func report(_ printer: Printer, _ outcome: Replayed) {
        let (actions, matched, skipped, refused, mismatch) = (outcome.actions, outcome.matched, outcome.skipped, outcome.refused, outcome.mismatch)
        let style = printer.style
        for skip in skipped { printer.note("checkpoint at seq \(skip.seq) not compared: \(skip.reason)") }
        for refusal in refused {
            printer.line(style.red("seq \(refusal.seq) is refused by the reducers on replay: \(refusal.reason)"))
        }
        if let mismatch {
            printer.line(style.red(style.bold("checkpoint at seq \(mismatch.seq) differs from the replay: \(mismatch.reason)")))
            printer.line("  checkpoint hash \(mismatch.checkpointHash)")
            printer.line("  replayed hash   \(mismatch.replayedHash)")
            if !mismatch.patch.operations.isEmpty {
                printer.line("  from the checkpoint's state to the replayed one:")
                printer.patch(mismatch.patch, before: nil, indent: "  ")
            }
            printer.line("\(matched.count) checkpoint(s) before it matched")
        } else if refused.isEmpty {
            let what = matched.isEmpty ? "no checkpoint to compare with" : "\(matched.count) checkpoint(s) match"
            printer.line(style.green("verified \(actions) actions: \(what)"))
        }
    }
}

/// `reel find EXPR`: every run of seqs at which a condition holds.
struct FindCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find", abstract: "List every run of seqs at which a condition on the state holds.",
        discussion: """
            EXPR is bisect's: a JSON Pointer, a comparison and a JSON value, or exists/missing and a \
            pointer, such as '/cart/total > 100' or 'exists /session'. Unlike bisect, the condition \
            may come and go: each run is printed as FROM..TO, or FROM.. when it still holds at the \
            latest seq, oldest first; runs are clipped to --from and --to. Folds every action of \
            the window once (from the checkpoint before --from). Exits 1 when the condition holds \
            at no seq of the window. With --json: {"from", "to"} per run ("to" left out when it \
            still holds at the latest seq).
            """
    )

    @Argument(help: ArgumentHelp("The condition, such as '/cart/total > 100'.", valueName: "expr")) var expression: String
    @Option(
        name: .customLong("from"), parsing: .unconditional, help: ArgumentHelp("The first seq (default: 1).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var from: SeqArgument?
    @Option(
        name: .customLong("to"), parsing: .unconditional, help: ArgumentHelp("The last seq (default: the latest).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var to: SeqArgument?
    @OptionGroup var source: SourceOptions

    func validate() throws {
        _ = try parsedCondition(expression)
        if let from, let to, from.value > to.value {
            throw ValidationError("--from (\(from.value)) is after --to (\(to.value))")
        }
    }

    func run() async throws {
        let printer = source.output.printer
        let condition = try parsedCondition(expression)  // (checked by validate)
        let store = try await source.open()
        let progress = printer.progress("finding", total: 0)
        var runs = 0
        let outcome: FindOutcome
        do {
            defer { progress.finish() }
            outcome = try await store.find(condition, from: max(from?.value ?? 1, 1), to: to?.value) { done, total in
                progress.update(UInt64(done), total: UInt64(total))
            } each: { range in
                runs += 1
                if printer.isJSON {
                    var members: JSONObject = ["from": JSONValue(seq: range.from)]
                    if let to = range.to { members["to"] = JSONValue(seq: to) }
                    printer.json(.object(members))
                } else {
                    printer.line("\(range.from)..\(range.to.map(String.init) ?? "")")
                }
            }
        }
        guard runs > 0 else {
            if !printer.isJSON {
                ToolContext.current.standardError.write("\(condition) holds at no seq in \(max(from?.value ?? 1, 1))…\(outcome.through)\n")
            }
            throw ExitCode(ExitStatus.negative)
        }
    }
}

/// The condition of `bisect` and `find`, or a usage error naming the column of the mistake.
func parsedCondition(_ expression: String) throws -> JSONCondition {
    do {
        return try JSONCondition(parsing: expression)
    } catch {
        throw ValidationError("\(error)")
    }
}
