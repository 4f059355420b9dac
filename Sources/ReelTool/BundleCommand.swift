import ArgumentParser
import Foundation
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel bundle --from A --to B -o FILE`: a slice of history in one file, to reproduce elsewhere.
struct BundleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle", abstract: "Write a slice of history into one file that reproduces it elsewhere.",
        discussion: """
            The file (gzip-compressed JSON lines) holds the state at seq FROM-1, the actions \
            FROM…TO with their provenance (time, peer, meta), what each changed, the reducers' \
            identity and the digest of the state at TO. Every read command reads it with \
            --bundle FILE, and `import --bundle FILE --data-dir DIR` makes a data directory of \
            it; both replay it and say which action first differs when this program's reducers \
            make something else of it. A @revert in the slice restores an earlier state: the \
            bundle then starts early enough to hold it. --redact P replaces the values at P (a \
            JSON Pointer; * matches any member or index) in the state and in every payload with \
            placeholders, the same placeholder for the same value. Run it with the program that \
            recorded the history. With --json: {"path", "from", "to", "actions", "bytes", "digest"}.
            """
    )

    /// Every action of a bundle is held in memory while it is written and read.
    static let maxActions: UInt64 = 1_000_000

    @OptionGroup var slice: SliceOptions
    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("The file to write.", valueName: "file"))
    var output: String
    @OptionGroup var source: SourceOptions

    var from: SeqArgument { slice.from }
    var to: SeqArgument { slice.to }
    var redactions: [String] { slice.redactions }

    func validate() throws {
        try slice.check(maxActions: Self.maxActions, limit: "a bundle holds at most")
    }

    func run() async throws {
        let context = ToolContext.current
        let printer = source.output.printer
        let store = try await source.open()
        let latest = try await store.latestSeq()
        guard to.value <= latest else {
            throw ToolError(RPCError(code: RPCError.Code.seqOutOfRange, message: "seq \(to.value) is beyond the latest seq \(latest)"))
        }
        try await HistorySlice.checkRecordedBySameReducers(store, around: from.value...to.value, reducer: context.reducer, to: "bundle it")
        // A @revert restores the state at its target, which a replay of the bundle reads from the
        // bundle itself: it starts at or before the earliest target.
        let requested = try await HistorySlice.actions(of: store, from: from.value, through: to.value)
        let earliestTarget = requested.compactMap { envelope -> UInt64? in
            if case .revert(let target)? = try? StoreAction(envelope.action) { target } else { nil }
        }.min()
        let start = min(from.value - 1, earliestTarget ?? .max)
        if start < from.value - 1 {
            printer.note("a @revert in the slice restores the state at seq \(start): the bundle starts from there (seqs \(start + 1)…\(to.value))")
        }
        let slice = try await HistorySlice.read(from: store, after: start, through: to.value)
        let folded = try context.foldSlice(slice, redactions)
        let bundle = BundleFile(folded: folded, reducer: context.reducer, redacted: redactions, source: store.label)
        try bundle.write(to: output)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        if printer.isJSON {
            printer.json([
                "path": .string(output), "from": JSONValue(seq: start + 1), "to": JSONValue(seq: to.value),
                "actions": .int(Int64(bundle.steps.count)), "bytes": .int(Int64(bytes)), "digest": .string(bundle.digest),
            ])
        } else {
            printer.line(
                "wrote seqs \(start + 1)…\(to.value) (\(bundle.steps.count) actions, from the state at seq \(start)) to \(output): "
                    + "\(Self.size(bytes)); the state at seq \(to.value) has digest \(bundle.digest)"
            )
        }
    }

    static func size(_ bytes: Int) -> String {
        bytes < 10 * 1024 ? "\(bytes) bytes" : bytes < 10 << 20 ? "\(bytes / 1024) KiB" : "\(bytes >> 20) MiB"
    }
}
