import ArgumentParser
import ReelJSON
import ReelProtocol

/// `reel watch [PATH] [--since SEQ] [--mode value|patch|actions]`: follow changes until interrupted.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Follow changes at a path until interrupted.",
        discussion: """
            Prints the value at PATH, then each change: the new value (--mode value), a patch \
            relative to the value shown before (--mode patch), or every new action (--mode actions). \
            With --since SEQ, starts from the state at SEQ and first shows what changed after it. \
            Offline (--data-dir), the directory is polled for new commits; --branch NAME follows a \
            branch of the history. With --json: the start \
            {"seq", "value"}, then one {"seq", "value" | "patch" | "actions"} per change.
            """
    )

    @Argument(help: ArgumentHelp("A JSON Pointer (default: the whole state).", valueName: "path"), transform: PointerArgument.parse)
    var path: PointerArgument?
    @Option(
        name: .customLong("since"), parsing: .unconditional, help: ArgumentHelp("Start from the state at this seq.", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var since: SeqArgument?
    @Option(name: .customLong("mode"), help: ArgumentHelp("What each change shows: the new value, a patch, or the new actions.", valueName: "mode"))
    var mode: ModeArgument = .init(.value)
    @Option(
        name: .customLong("count"), parsing: .unconditional, help: ArgumentHelp("Stop after this many changes.", valueName: "n"),
        transform: NumberArgument.count
    )
    var count: Int?
    @Option(name: .customLong("branch"), help: ArgumentHelp("Follow this branch of the history instead of the main one.", valueName: "name"))
    var branch: String?
    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let feed = try await store.watch(path: path?.pointer ?? .root, since: since?.value, mode: mode.mode, branch: branch)
        let table = mode.mode == .actions
            ? try await ActionTable.forListing(printer: printer, store: store, largestSeq: feed.seq, following: true)
            : ActionTable(printer: printer, largestSeq: feed.seq, following: true)
        if printer.isJSON {
            var start: JSONObject = ["seq": JSONValue(seq: feed.seq)]
            if let value = feed.value { start["value"] = value }
            printer.json(.object(start))
        } else if let value = feed.value {
            printer.line(printer.style.dim("seq \(feed.seq)"))
            printer.document(value)
        } else {
            printer.line(printer.style.dim("following actions after seq \(feed.seq)"))
        }
        var seen = 0
        for try await update in feed.updates {
            switch update.change {
            case .value(let value):
                if printer.isJSON {
                    printer.json(["seq": JSONValue(seq: update.seq), "value": value])
                } else {
                    printer.line(printer.style.dim("seq \(update.seq)"))
                    printer.document(value)
                }
            case .patch(let patch):
                if printer.isJSON {
                    printer.json(["seq": JSONValue(seq: update.seq), "patch": patch.jsonValue])
                } else {
                    printer.line(printer.style.dim("seq \(update.seq)"))
                    printer.patch(patch, before: nil)
                }
            case .actions(let actions):
                if printer.isJSON {
                    printer.json(["seq": JSONValue(seq: update.seq), "actions": .array(actions.map(\.wireJSON))])
                } else {
                    table.print(actions)
                }
            }
            seen += 1
            if let count, seen >= count { return }
        }
    }
}

/// Reads `--mode`.
struct ModeArgument: ExpressibleByArgument, Sendable {
    var mode: SubscriptionMode

    init(_ mode: SubscriptionMode) {
        self.mode = mode
    }

    init?(argument: String) {
        guard let mode = SubscriptionMode(rawValue: argument) else { return nil }
        self.mode = mode
    }

    var defaultValueDescription: String { mode.rawValue }
    static var allValueStrings: [String] { SubscriptionMode.allCases.map(\.rawValue) }
}
