import ArgumentParser
import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore

/// `reel import FILE --data-dir NEW`: build a new data directory from exported actions, or
/// (`--bundle FILE`) from a bundle.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Build a new data directory from exported actions or a bundle.",
        discussion: """
            FILE holds NDJSON actions as `export` writes them ('-' for stdin), starting at seq 1 \
            with no gaps. Each action is folded with this program's reducers, keeping its seq, time, \
            peer (with its exe) and meta, and checkpoints are written on the way. The target must be new or empty. \
            The directory is built in TARGET/.reel-importing and moved into place only whole and synced: if the \
            import fails, the target is left as it was. With --json: {"path", "seq", "checkpoints"}.

            With --bundle FILE (what `bundle` writes), the directory's history starts from the \
            bundle's first state and holds its actions with their seqs; each action's outcome is \
            compared with the one the bundle recorded, and the import fails, naming the first \
            action that differs and each differing field, when this program's reducers make \
            something else of it. With --json: {"path", "from", "to", "checkpoints", "digest"}.
            """
    )

    @Argument(help: ArgumentHelp("The exported actions, or - for stdin.", valueName: "file")) var file: String?
    @Option(name: .customLong("bundle"), help: ArgumentHelp("Import this bundle instead.", valueName: "file")) var bundle: String?
    @Option(name: .customLong("data-dir"), help: ArgumentHelp("The new data directory.", valueName: "path")) var dataDir: String
    @Option(
        name: .customLong("checkpoint-every"), parsing: .unconditional,
        // The default is in the text: argument-parser shows none for an option read by a transform.
        help: ArgumentHelp("Write a checkpoint every N actions; 0: only at the end (default: 10000).", valueName: "n"),
        transform: { try NumberArgument.whole($0, "a number of actions", minimum: 0) }
    )
    var checkpointEvery: UInt64 = 10_000
    @OptionGroup var output: OutputOptions

    func validate() throws {
        switch (file, bundle) {
        case (nil, nil): throw ValidationError("give the exported actions (FILE, or - for stdin) or --bundle FILE")
        case (.some, .some): throw ValidationError("FILE and --bundle exclude each other: import an export or a bundle")
        default: break
        }
    }

    func run() async throws {
        let printer = output.printer
        let staging = try ImportStaging(target: dataDir)
        do {
            if let bundle {
                try importBundle(bundle, into: staging, printer: printer)
            } else if let file {
                try importExport(file, into: staging, printer: printer)
            }
        } catch {
            // Nothing of a failed import is worth keeping: its staging directory goes (with the
            // target, when the import made it), and the target is as it was.
            staging.discard()
            throw error
        }
    }

    private func importExport(_ file: String, into staging: ImportStaging, printer: Printer) throws(ToolError) {
        let settings = ImportSettings(checkpointEvery: checkpointEvery, sync: .atFinish)
        try staging.checkTarget(settings)
        let done = try writeExport(file, into: staging.path, settings: settings, printer: printer)
        try staging.commit()
        if printer.isJSON {
            printer.json(["path": .string(dataDir), "seq": JSONValue(seq: done.seq), "checkpoints": .int(Int64(done.checkpoints))])
        } else {
            printer.line("imported \(done.seq) actions into \(dataDir) (\(done.checkpoints) checkpoint(s))")
        }
    }

    /// Folds and writes the exported actions into the directory at `path`, and closes it.
    private func writeExport(
        _ file: String, into path: String, settings: ImportSettings, printer: Printer
    ) throws(ToolError) -> (seq: UInt64, checkpoints: Int) {
        let target = try ToolContext.current.openImport(path, settings)
        defer { target.close() }
        let size = InputReader.size(of: file)
        let progress = printer.progress("importing", total: UInt64(size ?? 0))
        defer { progress.finish() }
        let source = file == "-" ? "stdin" : file
        // Each batch of lines parsed and encoded as the log stores it, into one buffer, on threads
        // of their own while the batches before are folded and written.
        let decode = { @Sendable (line: UnsafeRawBufferPointer, number: Int, actions: inout EncodedActions) throws(ToolError) in
            // The plain form the export writes, read without building the line's objects (its
            // payload written straight into the record's encoding); any other line goes the
            // general way, which reads it or says what is wrong.
            if actions.append(reading: { payload in LoggedActionLine.read(line, encodingPayloadInto: &payload) }) { return }
            let json = try InputReader.json(line, what: "line \(number) of \(source)")
            do throws(RPCError) {
                actions.append(try ActionEnvelope(wire: json))
            } catch {
                throw ToolError("line \(number): \(error.message)", exitStatus: ExitStatus.dataError)
            }
        }
        try DecodedLines.forEachBatch(
            path: file, progress: { progress.update(UInt64($0)) }, makeOutput: { EncodedActions() }, decode: decode
        ) { (actions, numbers) throws(ToolError) in
            let before = target.latestSeq
            do throws(ToolError) {
                try target.append(contentsOf: actions)
            } catch {
                // The actions before the one refused went in: it is the next.
                let refused = numbers[min(Int(target.latestSeq - before), numbers.count - 1)]
                throw ToolError("line \(refused): \(error.message)", exitStatus: error.exitStatus)
            }
        }
        return try target.finish()
    }

    private func importBundle(_ path: String, into staging: ImportStaging, printer: Printer) throws(ToolError) {
        let bundle = try BundleFile.read(from: path)
        let importer = BundleImport(bundle, checkpointEvery: checkpointEvery, sync: .atFinish)
        try staging.checkTarget(importer.settings)
        let progress = printer.progress("importing", total: UInt64(bundle.steps.count))
        let outcome: BundleImport.Outcome
        do {
            defer { progress.finish() }
            outcome = try importer.run(into: staging.path) { seq in progress.update(seq - bundle.startSeq) }
        }
        if let explanation = importer.explain(outcome) {
            throw ToolError("\(path) does not reproduce here: \(explanation)", exitStatus: ExitStatus.negative)
        }
        try staging.commit()
        let (first, last) = (bundle.startSeq + 1, bundle.endSeq)
        if printer.isJSON {
            printer.json([
                "path": .string(dataDir), "from": JSONValue(seq: first), "to": JSONValue(seq: last),
                "checkpoints": .int(Int64(outcome.checkpoints)), "digest": .string(outcome.digest),
            ])
        } else {
            printer.line(
                "imported seqs \(first)…\(last) of \(path) into \(dataDir) (\(outcome.checkpoints) checkpoint(s)): every action changed the state "
                    + "as recorded, and the state at seq \(last) has the bundle's digest \(outcome.digest)"
            )
        }
    }
}

/// How `import` makes its data directory.
struct ImportSettings: Sendable {
    var checkpointEvery: UInt64
    /// The state the history starts from, and its seq (a bundle's); `nil`: the initial state, seq 0.
    var origin: Checkpoint?
    /// When the writes reach the disk.
    var sync = ImportSync.everyCommit
}

/// When an import's writes reach the disk.
enum ImportSync: Sendable {
    /// At every commit.
    case everyCommit
    /// Once, when the import finishes: `reel import` writes a staging directory, which it moves
    /// into place only once it is whole and synced, so nothing unsynced is ever at the target.
    case atFinish
    /// Never: a directory nobody keeps (a bundle opened for reading).
    case never
}

/// Where `import` writes: a new data directory folded with the program's reducers.
protocol ImportTarget {
    /// Appends an action. One the reducers refuse ends the import, or, `keepingRefused`, is
    /// logged all the same, the state left as it was, and the refusal returned.
    @discardableResult
    func append(_ action: ActionEnvelope, keepingRefused: Bool) throws(ToolError) -> String?
    /// Appends the actions of `actions` in order, as ``append(_:keepingRefused:)`` each, the
    /// first refused thrown (those before it appended: ``latestSeq`` is the last of them).
    func append(contentsOf actions: EncodedActions) throws(ToolError)
    /// The seq of the last action appended.
    var latestSeq: UInt64 { get }
    /// The state the actions appended so far folded into, as JSON.
    func state() throws(ToolError) -> JSONValue
    func finish() throws(ToolError) -> (seq: UInt64, checkpoints: Int)
    func close()
}

final class StoreImportTarget<State: StoreState>: ImportTarget {
    private var importer: LogImporter<State>?
    private let sync: ImportSync

    init(path: String, definition: StoreDefinition<State>, settings: ImportSettings) throws(ToolError) {
        var options = StoreOptions(checkpointEvery: settings.checkpointEvery)
        options.storage.origin = settings.origin
        options.storage.durable = settings.sync == .everyCommit
        sync = settings.sync
        do {
            importer = try LogImporter(path: path, definition: definition, options: options)
        } catch {
            throw ToolError(error)
        }
    }

    func state() throws(ToolError) -> JSONValue {
        guard let importer else { throw ToolError("the import was closed") }
        do {
            return try importer.state.jsonValue()
        } catch {
            throw ToolError("the state after seq \(importer.latestSeq) does not encode as JSON: \(error)")
        }
    }

    @discardableResult
    func append(_ action: ActionEnvelope, keepingRefused: Bool) throws(ToolError) -> String? {
        try appending { importer throws(StoreError) in try importer.append(action, keepingRefused: keepingRefused) }
    }

    func append(contentsOf actions: EncodedActions) throws(ToolError) {
        _ = try appending { importer throws(StoreError) in
            try importer.append(contentsOf: actions)
            return nil
        }
    }

    var latestSeq: UInt64 { importer?.latestSeq ?? 0 }

    private func appending(_ append: (LogImporter<State>) throws(StoreError) -> StoreError?) throws(ToolError) -> String? {
        guard let importer else { throw ToolError("the import was closed") }
        do {
            return try append(importer)?.message
        } catch where error.code == .storage {
            throw ToolError(error)
        } catch {
            // Out-of-order seqs, or actions these reducers refuse: the input is not a log of this store.
            throw ToolError(error.message, exitStatus: ExitStatus.dataError)
        }
    }

    func finish() throws(ToolError) -> (seq: UInt64, checkpoints: Int) {
        guard let importer else { throw ToolError("the import was closed") }
        do {
            let done = try importer.finish()
            if sync == .atFinish { try importer.sync() }
            return done
        } catch {
            throw ToolError(error)
        }
    }

    /// Releases the LMDB environment (so the directory can be removed cleanly).
    func close() {
        importer = nil
    }
}

/// `reel backup DEST`: a consistent, compact, owner-only copy of the data directory.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Make a consistent hot copy of the data directory.",
        discussion: """
            DEST must be new or empty. The copy is compact (free pages left out) and readable by \
            its owner only (directory 0700, file 0600). Live, the daemon writes it as its own user \
            on its own machine (a relative DEST is taken from the current directory); offline, \
            this program copies the directory it reads. Restore by pointing reeld --data-dir at \
            the copy. With --json: {"path", "seq", "bytes"}.
            """
    )

    @Argument(help: ArgumentHelp("The new directory for the copy.", valueName: "dest")) var destination: String
    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let absolute = destination.hasPrefix("/") ? destination : FileManager.default.currentDirectoryPath + "/" + destination
        let outcome = try await store.backup(to: absolute)
        if printer.isJSON {
            printer.json(outcome.asJSON)
        } else {
            printer.line("backup of seq \(outcome.seq) written to \(outcome.path) (\(Self.size(outcome.bytes)))")
        }
    }

    static func size(_ bytes: Int64) -> String {
        if bytes < 1 << 20 { return "\((bytes + 1023) / 1024) KiB" }
        return String(format: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }
}

/// `reel stats`: the daemon's figures (offline: the data directory's).
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Print the daemon's figures (offline: the data directory's).",
        discussion: "With --json: the figures as one object."
    )

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let stats = try await store.stats()
        if printer.isJSON {
            printer.json(stats.jsonValue)
            return
        }
        printer.table(["FIGURE", "VALUE"], rows: StatsPresentation.rows(stats))
    }
}

/// `reel checkpoints`: the checkpoints kept beside the log.
struct CheckpointsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoints", abstract: "List the checkpoints kept beside the log.",
        discussion: "With --json: one {seq, reducer, time, hash} per line."
    )

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let list = try await store.checkpoints()
        if printer.isJSON {
            for checkpoint in list { printer.json(checkpoint.asJSON) }
            return
        }
        guard !list.isEmpty else {
            printer.line("no checkpoints yet: one is written every --checkpoint-every actions and at shutdown")
            return
        }
        let rows = list.map { [String($0.seq), $0.time.rfc3339Seconds, $0.reducer.description, String($0.hash.prefix(16))] }
        printer.table(["SEQ", "TIME", "REDUCER", "HASH"], rows: rows, rightAligned: [0])
    }
}
