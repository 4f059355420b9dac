import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel branch create NAME --at SEQ` / `list` / `delete NAME`: branches of the history.
struct BranchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "branch", abstract: "Fork the history at a seq, list the branches, delete one.",
        discussion: """
            A branch starts from the main history's state at a seq and takes actions of its own \
            (`dispatch --branch NAME`), numbered on from there; `get`, `log` and `diff` read it \
            with --branch NAME, and `diff --branch NAME` compares it with the main history. \
            Creating one copies nothing. The main history and everything that reads it (verify, \
            export, the shared log) never see a branch.
            """,
        subcommands: [BranchCreateCommand.self, BranchListCommand.self, BranchDeleteCommand.self]
    )
}

struct BranchCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Fork the history at a seq.",
        discussion: "NAME holds letters, digits, '-', '_', '.' and '/'. With --json: {\"name\", \"at\", \"seq\", \"created\"}."
    )

    @Argument(help: ArgumentHelp("The branch's name.", valueName: "name")) var name: String
    @Option(name: .customLong("at"), parsing: .unconditional, help: ArgumentHelp("The seq of the main history it starts after (default: the latest).", valueName: "seq"), transform: SeqArgument.parse)
    var at: SeqArgument?
    @OptionGroup var source: DaemonSourceOptions

    func validate() throws {
        if let problem = BranchName.problem(name) { throw ValidationError(problem) }
    }

    func run() async throws {
        let printer = source.output.printer
        let store = try await openDaemon(source, to: "creating a branch")
        let seq: UInt64
        if let at { seq = at.value } else { seq = try await store.latestSeq() }
        let branch = try await store.call(Method.BranchCreate.self, BranchCreateParams(name: name, at: seq))
        if printer.isJSON {
            printer.json(branch.jsonValue)
        } else {
            printer.line("branch \(branch.name) starts after seq \(branch.at): `\(ToolContext.current.programName) dispatch --branch \(branch.name) …` adds to it")
        }
    }
}

struct BranchListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the branches.",
        discussion: "With --json: one {\"name\", \"at\", \"seq\", \"created\"} per line."
    )

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let branches = try await store.call(Method.Branches.self, BranchesParams()).branches
        if printer.isJSON {
            for branch in branches { printer.json(branch.jsonValue) }
            return
        }
        guard !branches.isEmpty else {
            printer.note("no branches: `\(ToolContext.current.programName) branch create NAME --at SEQ` makes one")
            return
        }
        printer.table(
            ["NAME", "AT", "SEQ", "ACTIONS", "CREATED"],
            rows: branches.map { [$0.name, "\($0.at)", "\($0.seq)", "\($0.seq - $0.at)", $0.created.rfc3339Seconds] },
            rightAligned: [1, 2, 3]
        )
    }
}

struct BranchDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a branch and its actions.")

    @Argument(help: ArgumentHelp("The branch's name.", valueName: "name")) var name: String
    @OptionGroup var source: DaemonSourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await openDaemon(source, to: "deleting a branch")
        _ = try await store.call(Method.BranchDelete.self, BranchDeleteParams(name: name))
        if printer.isJSON { printer.json([:]) } else { printer.line("branch \(name) deleted") }
    }
}

/// The daemon, for a command that writes; with `--data-dir`, the refusal (exit 64).
private func openDaemon(_ source: DaemonSourceOptions, to what: String) async throws(ToolError) -> any StoreSource {
    if let dataDir = source.dataDir {
        throw ToolError(
            "\(what) needs a running daemon: the data directory \(dataDir) would only be read. Drop --data-dir to use the daemon's socket",
            exitStatus: ExitStatus.usage
        )
    }
    return try await source.open()
}
