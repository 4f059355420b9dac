import ArgumentParser
import Foundation
import ReelConsole
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStore

/// `reel log [--from SEQ] [--to SEQ] [--type T] [--correlation ID] [--limit N | --last N | --all]
/// [--follow]`: the actions, one per line.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "List actions with their seq, time, type and peer.",
        discussion: """
            On a terminal, with none of --from, --to, --limit, --last and --all, shows the newest \
            actions, as many as fit the screen (20 when its height is unknown), and says on stderr \
            how to see more. Piped, or with --json, lists every action of the range, oldest first. \
            --from beyond the latest seq is refused (as `get --at` refuses it), except with \
            --follow, which waits for it. When --type matches nothing, stderr says so (and which \
            types the store has) and no row is printed. --correlation keeps the actions dispatched \
            with that correlation id (`dispatch --correlation-id`), with --type too if given. \
            --changed keeps the actions that changed the value at a JSON Pointer (absent counting \
            as a value: the action that created it, and the one that removed it, changed it), \
            answered from the store's change index. --desc lists newest first. The \
            table leaves out the peer's executable and the action's meta (`show SEQ` prints them). \
            With --json: one action per line, {seq, type, payload, time, peer: {uid, gid, pid, \
            exe?}, meta?}.
            """
    )

    /// How many newest actions a terminal shows without `--last`, when its height is unknown.
    static let defaultPageRows = 20

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
    @Option(name: .customLong("type"), help: ArgumentHelp("Only actions of this type (repeatable).", valueName: "type")) var types: [String] = []
    @Option(name: .customLong("correlation"), help: ArgumentHelp("Only actions dispatched with this correlation id.", valueName: "id"))
    var correlationId: String?
    @Option(
        name: .customLong("changed"), help: ArgumentHelp("Only actions that changed the value at this JSON Pointer (\"\" is the whole state).", valueName: "path"),
        transform: PointerArgument.parse
    )
    var changedPath: PointerArgument?
    var changed: JSONPointer? { changedPath?.pointer }
    @Flag(name: .customLong("desc"), help: "Newest first (with --limit: the newest N).") var newestFirst = false
    @Option(
        name: .customLong("limit"), parsing: .unconditional, help: ArgumentHelp("At most this many actions, the oldest first.", valueName: "n"),
        transform: NumberArgument.count
    )
    var limit: Int?
    @Option(
        name: .customLong("last"), parsing: .unconditional, help: ArgumentHelp("Only the newest N actions (of the range and types).", valueName: "n"),
        transform: NumberArgument.count
    )
    var last: Int?
    @Flag(name: .customLong("all"), help: "Every action of the range, also on a terminal (which otherwise shows the newest page).")
    var all = false
    @Flag(name: .customLong("follow"), help: "Keep printing new actions as they are committed, until interrupted.") var follow = false
    @Option(name: .customLong("branch"), help: ArgumentHelp("List a branch of the history: the main history's actions up to its fork, then its own.", valueName: "name"))
    var branch: String?
    @OptionGroup var source: SourceOptions

    func validate() throws {
        if branch != nil && (follow || changed != nil || correlationId != nil || newestFirst) {
            throw ValidationError("--branch lists a branch oldest first, by range and type: it takes no --follow, --changed, --correlation or --desc")
        }
        if limit != nil && last != nil { throw ValidationError("--limit takes the oldest actions and --last the newest: give one of them") }
        if all && (limit != nil || last != nil) { throw ValidationError("--all lists every action: it takes no --\(limit != nil ? "limit" : "last")") }
        if follow && to != nil { throw ValidationError("--follow prints actions as they come: it takes no --to") }
        if follow && changed != nil { throw ValidationError("--changed reads the past: it takes no --follow (`reel watch PATH` follows a value)") }
        if follow && newestFirst { throw ValidationError("--follow prints actions as they come, oldest first: it takes no --desc") }
        if let from, let to, from.value > to.value {
            throw ValidationError("--from \(from.value) is after --to \(to.value): no action lies between them")
        }
        if let correlationId, let problem = ActionMeta.problem(with: correlationId, as: .correlationId) {
            throw ValidationError("--correlation \(problem): no action carries a longer one")
        }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let typeFilter = types.isEmpty ? nil : Set(types)
        let filter = HistoryFilter(types: typeFilter, correlationId: correlationId)
        let latest: UInt64
        if let branch { latest = try await store.latestSeq(ofBranch: branch) } else { latest = try await store.latestSeq() }
        // A start the log has not reached shows nothing: refused, as `get --at` refuses it.
        // `--follow` waits for it instead.
        if let from, from.value > latest, !follow {
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(from.value) is beyond the latest seq \(latest)"))
        }
        let first = max(from?.value ?? 1, 1)
        let end = min(to?.value ?? latest, latest)
        let table = try await ActionTable.forListing(printer: printer, store: store, largestSeq: end, following: follow)
        // On a terminal with no range asked for, only the newest page: a long log would scroll
        // past, and the newest actions are the ones looked for. `--last` asks for it anywhere.
        let paged = printer.isTerminal && from == nil && to == nil && limit == nil && last == nil && !all
        let newest = last ?? (paged ? pageRows(printer) : nil)
        var printed = 0
        var lastSeen = first - 1
        if let newest {
            let tail = try await Self.newest(newest, of: store, from: first, through: end, filter: filter, changed: changed, branch: branch)
            table.print(newestFirst ? tail.actions.reversed() : tail.actions)
            printed = tail.actions.count
            lastSeen = end
            if paged, let shownFirst = tail.actions.first?.seq, let shownLast = tail.actions.last?.seq, tail.more {
                let which = filter.keepsEverything && changed == nil
                    ? "\(printed) of \(end) actions" : "\(printed) actions \(Self.describe(filter, changed: changed))"
                printer.note("seqs \(shownFirst)…\(shownLast), the newest \(which); more: --last N, --from SEQ, or --all")
            }
        } else {
            // Oldest first, each page's `next` is the next `from`; newest first, the next `to`.
            var next: UInt64? = newestFirst ? end : first
            while let bound = next, first <= end, printed < (limit ?? .max) {
                let pageSize = min(store.historyPageSize, (limit ?? .max) - printed)
                let (from, to) = newestFirst ? (first, bound) : (bound, end)
                guard from <= to else { break }
                let page = try await store.history(
                    from: from, to: to, limit: pageSize, types: typeFilter, correlationId: correlationId, changed: changed, newestFirst: newestFirst,
                    branch: branch
                )
                table.print(page.actions)
                printed += page.actions.count
                lastSeen = newestFirst ? end : page.actions.last?.seq ?? end
                next = page.next
            }
            if next == nil { lastSeen = max(lastSeen, end) }
        }
        if printed == 0 && !follow {
            try await noteEmpty(printer, store: store, first: first, end: end, latest: latest, filter: filter, changed: changed)
        }
        guard follow, printed < (limit ?? .max) else { return }
        // `--from` may lie in the future: follow from the latest seq and skip what comes before it.
        let feed = try await store.watch(path: .root, since: min(lastSeen, end), mode: .actions, branch: nil)
        for try await update in feed.updates {
            guard case .actions(let actions) = update.change else { continue }
            let wanted = actions.filter { $0.seq >= first && filter.keeps($0) }
            let kept = wanted.prefix((limit ?? .max) - printed)
            table.print(Array(kept))
            printed += kept.count
            if printed >= (limit ?? .max) { return }
        }
    }

    /// The rows a terminal shows: its height less the header, the note under the table and the
    /// prompt after it; 20 when the height is unknown.
    private func pageRows(_ printer: Printer) -> Int {
        guard let height = printer.terminalHeight else { return Self.defaultPageRows }
        return max(height - 3, 3)
    }

    /// The newest `count` actions in `first…end` that `filter` keeps, oldest first, and whether
    /// any matching action comes before them. Reads backwards in growing windows, so that a rare
    /// type or correlation id does not cost a read of the whole log page by page from its start.
    static func newest(
        _ count: Int, of store: any StoreSource, from first: UInt64, through end: UInt64, filter: HistoryFilter, changed: JSONPointer? = nil,
        branch: String? = nil
    ) async throws(ToolError) -> (actions: [ActionEnvelope], more: Bool) {
        guard first <= end else { return ([], false) }
        var found: [ActionEnvelope] = []
        var high = end
        var window = UInt64(filter.keepsEverything && changed == nil ? count : max(count, 256))
        while true {
            let low = high - first + 1 > window ? high - window + 1 : first
            var inWindow: [ActionEnvelope] = []
            var next: UInt64? = low
            while let start = next, start <= high {
                let page = try await store.history(
                    from: start, to: high, limit: store.historyPageSize, types: filter.types, correlationId: filter.correlationId, changed: changed,
                    branch: branch
                )
                inWindow += page.actions
                next = page.next
            }
            found = inWindow + found
            if found.count >= count {
                // Earlier matches than those kept: surely when some were cut; else unknown unless
                // the log before the window is empty.
                return (Array(found.suffix(count)), found.count > count || low > first)
            }
            guard low > first else { return (found, false) }
            high = low - 1
            window = window.multipliedReportingOverflow(by: 2).overflow ? .max : window * 2
        }
    }

    /// Says on stderr why no row was printed: an empty log, or a filter that matched nothing.
    private func noteEmpty(
        _ printer: Printer, store: any StoreSource, first: UInt64, end: UInt64, latest: UInt64, filter: HistoryFilter, changed: JSONPointer?
    ) async throws(ToolError) {
        guard latest > 0 else {
            printer.note("the log is empty: no action has been dispatched yet")
            return
        }
        let range = first == end ? "seq \(first)" : "seqs \(first)…\(end)"
        guard !filter.keepsEverything || changed != nil else {
            printer.note("no action in \(range)")
            return
        }
        var note = "no action \(Self.describe(filter, changed: changed)) in \(range)"
        guard let types = filter.types else {
            printer.note(note)
            return
        }
        // Which types there are: the store's, from `describe` (reading the whole log to list the
        // types in it could take minutes).
        if let known = try? await store.call(Method.Describe.self, DescribeParams()).actions.map(\.type) {
            let unknown = types.subtracting(known)
            if !unknown.isEmpty {
                note += " (\(Self.list(unknown)) \(unknown.count == 1 ? "is not a type" : "are not types") of this store; its types: "
                    + known.joined(separator: ", ") + ")"
            }
        }
        printer.note(note)
    }

    /// `'a'`, or `'a', 'b'`, sorted.
    static func list(_ types: Set<String>) -> String {
        types.sorted().map { "'\($0)'" }.joined(separator: ", ")
    }

    /// What `filter` keeps, after "actions": `of type 'a' with correlation id 'order-17'`.
    static func describe(_ filter: HistoryFilter, changed: JSONPointer? = nil) -> String {
        var parts: [String] = []
        if let changed { parts.append("that changed \(changed.isRoot ? "the state" : changed.description)") }
        if let types = filter.types { parts.append("of type \(list(types))") }
        if let correlationId = filter.correlationId { parts.append("with correlation id \(list([correlationId]))") }
        return parts.joined(separator: " ")
    }
}

/// `reel show SEQ`: one action and the change it made.
struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one action and the diff it made.",
        discussion: """
            Under the action's line: the peer's executable (exe) when the daemon could read it, and \
            the provenance it was dispatched with (causation, correlation, source, trace), each on \
            a line of its own when given. With --json: {"action": {seq, type, payload, time, peer, \
            meta?}, "patch": [RFC 6902 operations]}.
            """
    )

    /// The label of a meta member's line.
    static func label(_ member: ActionMeta.Member) -> String {
        switch member {
        case .causationId: "causation"
        case .correlationId: "correlation"
        case .source: "source"
        case .traceparent: "trace"
        }
    }

    @Argument(help: ArgumentHelp("The action's seq.", valueName: "seq"), transform: SeqArgument.parse) var seq: SeqArgument
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
        if let exe = envelope.peer.exe { printer.line("exe: " + TerminalText.escapingControlCharacters(exe)) }
        for (member, value) in envelope.meta?.members ?? [] {
            printer.line("\(Self.label(member)): " + TerminalText.escapingControlCharacters(value))
        }
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
        discussion: """
            One action per line, {seq, type, payload, time, peer: {uid, gid, pid, exe?}, meta?}, whatever --json says. \
            Progress goes to stderr on a terminal.
            """
    )

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
        if let from, let to, from.value > to.value {
            throw ValidationError("--from \(from.value) is after --to \(to.value): no action lies between them")
        }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let first = max(from?.value ?? 1, 1)
        let latest = try await store.latestSeq()
        if let from, from.value > latest {
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(from.value) is beyond the latest seq \(latest)"))
        }
        let last = min(to?.value ?? latest, latest)
        guard first <= last else { return }
        let progress = printer.progress("exporting", total: last - first + 1)
        defer { progress.finish() }
        // Stretches of a page each, read and written out as text on every core at once, printed
        // in order (one core read, decoded and wrote every action: 1.2 M actions/s offline).
        let size = UInt64(store.historyPageSize)
        let concurrency = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4))
        try await withThrowingTaskGroup(of: (start: UInt64, text: String).self) { group in
            var nextStart = first
            func startNext() {
                let start = nextStart, end = min(last, start + size - 1)
                nextStart = end + 1
                group.addTask { (start, try await Self.lines(of: store, from: start, through: end)) }
            }
            // At most `concurrency` stretches read and not yet printed: memory stays flat.
            for _ in 0..<concurrency where nextStart <= last { startNext() }
            var done: [UInt64: String] = [:]
            var printed = first
            while let (start, text) = try await group.next() {
                done[start] = text
                while let ready = done.removeValue(forKey: printed) {
                    printer.raw(ready)
                    printed = min(last, printed + size - 1) + 1
                    progress.update(printed - first)
                    if nextStart <= last { startNext() }
                }
            }
        }
    }

    /// The actions `from…through` as export lines: each action's bytes written straight from it
    /// (`writeWire`: the bytes `wireJSON` serializes to, without building and sorting that tree).
    private static func lines(of store: any StoreSource, from: UInt64, through: UInt64) async throws -> String {
        var bytes: [UInt8] = []
        var next: UInt64? = from
        while let start = next, start <= through {
            let page = try await store.history(from: start, to: through, limit: store.historyPageSize, types: nil)
            for envelope in page.actions {
                envelope.writeWire(into: &bytes)
                bytes.append(UInt8(ascii: "\n"))
            }
            next = page.next
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The actions table of `log` and `watch --mode actions`, or one JSON line per action. Printed
/// page by page as pages arrive, with the header once: the first page fixes the columns' widths
/// and later pages keep them, so every row lines up under the header.
final class ActionTable {
    static let headers = ["SEQ", "TIME", "TYPE", "PEER", "PAYLOAD"]
    /// The longest type name the TYPE column makes room for before any row needs it.
    static let typeRoom = 24

    let printer: Printer
    private var layout: Table.Layout?
    /// The least widths of the columns, for the rows still to come.
    private var minimumWidths: [Int]

    /// - Parameters:
    ///   - largestSeq: The largest seq expected; `following` adds a digit, for the seqs to come.
    ///   - typeNames: The store's action types: the TYPE column makes room for the longest
    ///     (up to ``typeRoom``).
    init(printer: Printer, largestSeq: UInt64, following: Bool, typeNames: [String] = []) {
        self.printer = printer
        let seqDigits = String(largestSeq).count + (following ? 1 : 0)
        let typeWidth = min(typeNames.map { TerminalText.width(of: $0) }.max() ?? 0, Self.typeRoom)
        minimumWidths = [seqDigits, 0, typeWidth, 0, 0]
    }

    /// The table for a listing of `store`: with the store's action types when printing for people.
    static func forListing(printer: Printer, store: any StoreSource, largestSeq: UInt64, following: Bool) async throws(ToolError) -> ActionTable {
        var typeNames: [String] = []
        if !printer.isJSON, let described = try? await store.call(Method.Describe.self, DescribeParams()) {
            typeNames = described.actions.map(\.type)
        }
        return ActionTable(printer: printer, largestSeq: largestSeq, following: following, typeNames: typeNames)
    }

    func print(_ actions: [ActionEnvelope]) {
        guard !actions.isEmpty else { return }
        if printer.isJSON {
            // One line each, the action's bytes written straight (as `export` does).
            var bytes: [UInt8] = []
            for envelope in actions {
                envelope.writeWire(into: &bytes)
                bytes.append(UInt8(ascii: "\n"))
            }
            printer.raw(String(decoding: bytes, as: UTF8.self))
            return
        }
        let rows = actions.map { envelope in
            [String(envelope.seq), envelope.time.rfc3339Seconds, envelope.type, Self.peer(envelope.peer), envelope.payload.jsonString]
        }
        if layout == nil {
            // Room for the pids of other processes: up to 7 digits (Linux's largest pid_max).
            let peers = actions.map { $0.peer == .unknown ? 1 : "uid \($0.peer.uid) pid ".count + max(7, String($0.peer.pid).count) }
            minimumWidths[3] = peers.max() ?? 0
        }
        layout = printer.tablePart(Self.headers, rows: rows, rightAligned: [0], layout: layout, minimumWidths: minimumWidths)
    }

    /// The peer's credentials. Its executable and the action's meta are not in the table, whose
    /// other columns leave the payload little enough room (`show` and `--json` have them).
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
