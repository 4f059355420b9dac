import ArgumentParser
import Foundation
import ReelConsole
import ReelProtocol
import ReelCore
import ReelStore

/// `reel`, the client and time-travel tool, for any store definition.
///
/// The stock `reel` runs it with the stock JSON reducer. An app with its own reducers runs it with
/// its own definition and a daemon to serve, and gets the daemon and every `reel` command for
/// its own state from one executable (see `ReelApp`).
public enum ReelTool {
    /// Where `reel` looks for the daemon without `--socket` or `$REEL_SOCKET`: `reeld`'s default
    /// socket (`./reel-data/reel.sock`, docs/REFERENCE.md). A test checks it against the daemon's defaults, so
    /// the two cannot drift apart (ReelTool does not depend on the daemon's settings module).
    public static let defaultSocketPath = "./reel-data/reel.sock"

    /// Parses `arguments` (the program's name first) and runs the command; returns the exit status.
    /// Output goes to the context's streams.
    public static func run(_ arguments: [String], context: ToolContext) async -> Int32 {
        var context = context
        context.opened = OpenedSources()
        let status = await ToolContext.$current.withValue(context) {
            await runInContext(Array(arguments.dropFirst()))
        }
        await context.opened.closeAll()
        return status
    }

    private static func runInContext(_ arguments: [String]) async -> Int32 {
        let context = ToolContext.current
        let arguments = Self.movingLeadingOptions(arguments)
        do {
            var command = try RootCommand.parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.success
        } catch let error as ToolError {
            context.standardError.write("\(context.programName): \(error.message)\n")
            return error.exitStatus
        } catch {
            let code = RootCommand.exitCode(for: error)
            let message = code == .success ? RootCommand.fullMessage(for: error)
                : Self.negativeNumberMessage(RootCommand.message(for: error), arguments: arguments) ?? RootCommand.fullMessage(for: error)
            if !message.isEmpty {
                // Help goes to stdout (it was asked for); usage errors to stderr.
                let stream = code == .success ? context.standardOutput : context.standardError
                stream.write(message + "\n")
            }
            return code.rawValue
        }
    }
}

extension ReelTool {
    /// The options every subcommand takes, with whether each takes a value.
    static let sharedOptions: [String: Bool] = ["--socket": true, "--data-dir": true, "--bundle": true, "--json": false, "--color": true]
    /// The commands that are groups: the options go behind their subcommand (`reel branch list`).
    static let commandGroups: Set<String> = ["branch"]

    /// `reel --socket S get` reads as `reel get --socket S`: people put the options that say
    /// where the store is before the command, as with `git -C` or `docker -H`. Each subcommand
    /// declares them (so they also work after it); this moves leading ones behind the subcommand.
    static func movingLeadingOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            guard let takesValue = sharedOptions[name] else { break }
            leading.append(argument)
            if takesValue && !argument.contains("="), index + 1 < arguments.endIndex {
                index += 1
                leading.append(arguments[index])
            }
            index += 1
        }
        guard !leading.isEmpty, index < arguments.endIndex else { return arguments }
        if commandGroups.contains(arguments[index]), index + 1 < arguments.endIndex {
            return [arguments[index], arguments[index + 1]] + leading + arguments[(index + 2)...]
        }
        return [arguments[index]] + leading + arguments[(index + 1)...]
    }
}

extension ReelTool {
    /// What to say when a negative number stands where an argument was expected (`reel show -1`,
    /// `reel diff -3 5`): argument-parser reads it as an option and says "Unknown option '-1'" or
    /// "Missing expected argument '<seq>'". Numeric options read their value unconditionally
    /// (`--at -1` reaches the option, which says what it takes); this covers the positional ones.
    /// `nil` when the error is another one.
    static func negativeNumberMessage(_ message: String, arguments: [String]) -> String? {
        guard message.hasPrefix("Unknown option '-") || message.hasPrefix("Missing expected argument") else { return nil }
        guard let negative = arguments.dropFirst().first(where: isNegativeNumber) else { return nil }
        if message.hasPrefix("Unknown option '-"), message != "Unknown option '\(negative)'" { return nil }
        let program = ToolContext.current.programName
        let command = arguments.first.map { " " + $0 } ?? ""
        return """
            Error: '\(negative)' is negative: seqs and counts are 0 or more (an argument that starts with '-' is read as an option; after '--' it is taken as a value)
              See '\(program)\(command) --help' for more information.
            """
    }

    private static func isNegativeNumber(_ argument: String) -> Bool {
        guard argument.count > 1, argument.hasPrefix("-") else { return false }
        let digits = argument.dropFirst()
        return digits.first?.isNumber == true && digits.allSatisfy { $0.isNumber || $0 == "." }
    }
}

/// The root command: `reel <subcommand>`, or `<app> <subcommand>` with `serve` for apps.
struct RootCommand: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        let context = ToolContext.current
        var subcommands: [any ParsableCommand.Type] = [
            DispatchCommand.self, GetCommand.self, WatchCommand.self, LogCommand.self, ShowCommand.self,
            DiffCommand.self, ReplayCommand.self, BisectCommand.self, FindCommand.self, BlameCommand.self, VerifyCommand.self, ExportCommand.self, DescribeCommand.self,
            ImportCommand.self, RevertCommand.self, BackupCommand.self, StatsCommand.self, CheckpointsCommand.self, UICommand.self,
            ShadowCommand.self, ShadowWorkerCommand.self, CheckHistoryCommand.self, TestgenCommand.self, BundleCommand.self, BranchCommand.self,
        ]
        if context.serve != nil { subcommands.insert(ServeCommand.self, at: 0) }
        return CommandConfiguration(
            commandName: context.programName,
            abstract: context.serve == nil
                ? "Reel's client and time-travel tool: dispatch, read, watch and inspect the whole history."
                : "A Reel store (\(context.reducer)): run its daemon with `serve`, inspect it with the other commands.",
            discussion: """
                Live against a daemon (--socket, default $REEL_SOCKET or \(SourceOptions.defaultSocketPath)), \
                or offline on a data directory (--data-dir, opened read-only and safe while the daemon \
                runs). Output is for people unless --json is given (one JSON value per line); color \
                only on a terminal, and never with NO_COLOR set.

                Exit status: 0 done; 1 a negative answer (bisect: never holds; verify: a difference); \
                2 the daemon or the store refused the request; 64 a wrong command line; 65 invalid \
                input data (also a request over the daemon's line limit); 69 the daemon or data directory cannot be reached.
                """,
            version: ReelRelease.versionLine(program: context.programName),
            subcommands: subcommands
        )
    }
}

/// `<app> serve [reeld's options]`: the daemon, with the app's reducers.
struct ServeCommand: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "serve",
            abstract: "Run the daemon for this store: the settings of reeld (`\(ToolContext.current.programName) serve --help` lists them).",
            // The daemon reads its own flags, environment and config file: pass everything through.
            helpNames: []
        )
    }

    @Argument(parsing: .captureForPassthrough, help: "The daemon's options, such as --data-dir PATH --socket PATH.")
    var arguments: [String] = []

    func run() async throws {
        let context = ToolContext.current
        guard let serve = context.serve else { throw ToolError("this program has no daemon to serve", exitStatus: ExitStatus.usage) }
        let status = await serve([context.programName + " serve"] + arguments)
        if status != 0 { throw ExitCode(status) }
    }
}
