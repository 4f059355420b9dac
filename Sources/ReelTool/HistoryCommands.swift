import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel log [--from SEQ] [--to SEQ] [--type T] [--limit N] [--follow]`: the actions, one per line.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "List actions with their seq, time, type and peer.",
        discussion: "With --json: one action per line, {seq, type, payload, time, peer: {uid, gid, pid}}."
    )

    @Option(name: .customLong("from"), help: ArgumentHelp("The first seq (default: 1).", valueName: "seq")) var from: SeqArgument?
    @Option(name: .customLong("to"), help: ArgumentHelp("The last seq (default: the latest).", valueName: "seq")) var to: SeqArgument?
    @Option(name: .customLong("type"), help: ArgumentHelp("Only actions of this type (repeatable).", valueName: "type")) var types: [String] = []
    @Option(name: .customLong("limit"), help: ArgumentHelp("At most this many actions.", valueName: "n")) var limit: Int?
    @Flag(name: .customLong("follow"), help: "Keep printing new actions as they are committed, until interrupted.") var follow = false
    @OptionGroup var source: SourceOptions

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if follow && to != nil { throw ValidationError("--follow prints actions as they come: it takes no --to") }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let typeFilter = types.isEmpty ? nil : Set(types)
        let table = ActionTable(printer: printer)
        var printed = 0
        let first = max(from?.value ?? 1, 1)
        var next: UInt64? = first
        var lastSeen = first - 1
        let end: UInt64
        if let to { end = to.value } else { end = try await store.latestSeq() }
        while let start = next, start <= end, printed < (limit ?? .max) {
            let pageSize = min(store.historyPageSize, (limit ?? .max) - printed)
            let page = try await store.history(from: start, to: end, limit: pageSize, types: typeFilter)
            table.print(page.actions)
            printed += page.actions.count
            lastSeen = page.actions.last?.seq ?? end
            next = page.next
        }
        if next == nil { lastSeen = max(lastSeen, end) }
        guard follow, printed < (limit ?? .max) else { return }
        // `--from` may lie in the future: follow from the latest seq and skip what comes before it.
        let feed = try await store.watch(path: .root, since: min(lastSeen, end), mode: .actions)
        for try await update in feed.updates {
            guard case .actions(let actions) = update.change else { continue }
            let wanted = actions.filter { $0.seq >= first && (typeFilter?.contains($0.type) ?? true) }
            let kept = wanted.prefix((limit ?? .max) - printed)
            table.print(Array(kept))
            printed += kept.count
            if printed >= (limit ?? .max) { return }
        }
    }
}

/// `reel show SEQ`: one action and the change it made.
struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one action and the diff it made.",
        discussion: "With --json: {\"action\": {seq, type, payload, time, peer}, \"patch\": [RFC 6902 operations]}."
    )

    @Argument(help: ArgumentHelp("The action's seq.", valueName: "seq")) var seq: SeqArgument
    @OptionGroup var source: SourceOptions

    func validate() throws {
        guard seq.value >= 1 else { throw ValidationError("seq 0 is the initial state, not an action: actions start at seq 1") }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let page = try await store.history(from: seq.value, to: seq.value, limit: 1, types: nil)
        guard let envelope = page.actions.first else {
            let latest = try await store.latestSeq()
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(seq.value) is beyond the latest seq \(latest)"))
        }
        let patch = try await store.diff(from: seq.value - 1, to: seq.value, path: .root)
        if printer.isJSON {
            printer.json(["action": envelope.wireJSON, "patch": patch.jsonValue])
            return
        }
        let style = printer.style
        printer.line("\(style.bold("seq \(envelope.seq)"))  \(envelope.time.rfc3339)  \(style.bold(envelope.type))  \(ActionTable.peer(envelope.peer))")
        printer.line("payload: " + envelope.payload.jsonString)
        if patch.operations.isEmpty {
            printer.line(style.dim("no change to the state"))
        } else {
            printer.line("changes:")
            let before = try? await store.value(at: seq.value - 1, path: .root).value
            printer.patch(patch, before: before, indent: "  ")
        }
    }
}

/// `reel export [--from SEQ] [--to SEQ]`: the actions as NDJSON on stdout.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write the actions as NDJSON on stdout, for `import` or other tools.",
        discussion: "One action per line, {seq, type, payload, time, peer}, whatever --json says. Progress goes to stderr on a terminal."
    )

    @Option(name: .customLong("from"), help: ArgumentHelp("The first seq (default: 1).", valueName: "seq")) var from: SeqArgument?
    @Option(name: .customLong("to"), help: ArgumentHelp("The last seq (default: the latest).", valueName: "seq")) var to: SeqArgument?
    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let first = max(from?.value ?? 1, 1)
        let last: UInt64
        if let to { last = to.value } else { last = try await store.latestSeq() }
        guard first <= last else { return }
        let progress = printer.progress("exporting", total: last - first + 1)
        defer { progress.finish() }
        var next: UInt64? = first
        while let start = next, start <= last {
            let page = try await store.history(from: start, to: last, limit: store.historyPageSize, types: nil)
            var text = ""
            for envelope in page.actions {
                text += envelope.wireJSON.jsonString
                text += "\n"
            }
            printer.raw(text)
            if let seq = page.actions.last?.seq { progress.update(seq - first + 1) }
            next = page.next
        }
    }
}

/// The actions table of `log` and `watch --mode actions`, or one JSON line per action. Printed
/// page by page as pages arrive, with the header once.
final class ActionTable {
    let printer: Printer
    private var headerPrinted = false

    init(printer: Printer) {
        self.printer = printer
    }

    func print(_ actions: [ActionEnvelope]) {
        guard !actions.isEmpty else { return }
        if printer.isJSON {
            for envelope in actions { printer.json(envelope.wireJSON) }
            return
        }
        let rows = actions.map { envelope in
            [String(envelope.seq), envelope.time.rfc3339Seconds, envelope.type, Self.peer(envelope.peer), envelope.payload.jsonString]
        }
        printer.table(["SEQ", "TIME", "TYPE", "PEER", "PAYLOAD"], rows: rows, rightAligned: [0], header: !headerPrinted)
        headerPrinted = true
    }

    static func peer(_ peer: Peer) -> String {
        peer == .unknown ? "-" : "uid \(peer.uid) pid \(peer.pid)"
    }
}

extension Timestamp {
    /// RFC 3339 to the second, for tables: nanoseconds are noise to a person scanning a log.
    var rfc3339Seconds: String {
        let full = rfc3339
        guard let dot = full.firstIndex(of: ".") else { return full }
        return String(full[..<dot]) + "Z"
    }
}
