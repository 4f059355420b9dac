import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `reel`'s command line as a newcomer meets it (expecting what redis-cli and etcdctl do): help
/// that lists only what works, argument errors that say what was expected, answers that are never
/// silently empty, tables that stay aligned, and a log that shows a terminal its newest page.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct CommandLineTests {
    /// Every subcommand of the stock `reel`.
    static let commands = [
        "dispatch", "get", "watch", "log", "show", "diff", "replay", "bisect", "find", "verify", "export", "describe", "import", "revert",
        "backup", "stats", "checkpoints", "ui",
    ]

    /// The entries of a help text's OPTIONS and ARGUMENTS: each starts on a line indented by two
    /// spaces, its lines joined.
    static func helpEntries(_ help: String) -> [String] {
        var entries: [String] = []
        var inList = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "OPTIONS:" || line == "ARGUMENTS:" {
                inList = true
            } else if line.isEmpty || !line.hasPrefix(" ") {
                inList = false
            } else if inList {
                if line.hasPrefix("  ") && !line.hasPrefix("   ") {
                    entries.append(String(line))
                } else if !entries.isEmpty {
                    entries[entries.count - 1] += " " + line.trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return entries
    }

    /// Whether the cell of a table's column starts at `offset` in `line`: text there, and the two
    /// spaces of the column separator before it.
    static func cellStarts(at offset: Int, in line: String) -> Bool {
        let characters = Array(line)
        guard offset >= 2, characters.count > offset else { return false }
        return characters[offset] != " " && characters[offset - 1] == " " && characters[offset - 2] == " "
    }

    // MARK: Item 1: a log printed in parts stays aligned

    @Test func logFollowKeepsTheColumnsOfItsFirstPage() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let first = await Tool.run(story.live + ["dispatch", "set", #"{"path":"/n","value":1}"#])
        try #require(first.status == 0, "\(first.errors)")
        // Through a proxy, to see when the command has subscribed: only then come the new actions.
        let proxy = try SocketProxy(listeningAt: story.directory.sub("proxy.sock"), forwardingTo: story.daemon.socketPath)
        defer { proxy.stop() }
        async let follow = Tool.run(["--socket", proxy.path, "log", "--follow", "--limit", "3"])
        try await waitUntil("the command to subscribe") { proxy.requestLines.contains { $0.contains(#""method":"subscribe""#) } }
        // Types and payloads longer than the first page's, which fixed the columns.
        let increment = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/n","by":1000000}"#])
        try #require(increment.status == 0, "\(increment.errors)")
        let revert = await Tool.run(story.live + ["revert", "1"])
        try #require(revert.status == 0, "\(revert.errors)")
        let run = await follow
        #expect(run.status == 0, "\(run.errors)")
        try #require(run.lines.count == 4, "\(run.output)")
        let header = run.lines[0]
        #expect(header.split(separator: " ") == ["SEQ", "TIME", "TYPE", "PEER", "PAYLOAD"])
        for column in ["TYPE", "PEER", "PAYLOAD"] {
            let offset = try #require(header.range(of: column)).lowerBound.utf16Offset(in: header)
            for line in run.lines.dropFirst() {
                #expect(Self.cellStarts(at: offset, in: line), "\(column) is not under its header in:\n\(run.output)")
            }
        }
        #expect(run.lines[2].hasSuffix(#"{"by":1000000,"path":"/n"}"#), "\(run.output)")
        #expect(run.lines[3].contains("@revert"), "\(run.output)")
    }

    // MARK: Item 2: no silent answers

    @Test(arguments: Access.allCases) func beyondTheLatestSeqIsRefusedAndAnEmptyAnswerSaysSo(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        for arguments in [["log", "--from", "99"], ["export", "--from", "99"], ["replay", "--skip", "99"], ["replay", "--skip", "2,99", "--json"]] {
            let run = await story.run(access, arguments)
            #expect(run.status == 2, "\(arguments): \(run.errors)")
            #expect(run.errors.contains("seq 99 is beyond the latest seq 8"), "\(arguments): \(run.errors)")
            #expect(run.output.isEmpty, "\(arguments): \(run.output)")
        }
        let pastTo = await story.run(access, ["replay", "--skip", "7", "--to", "5"])
        #expect(pastTo.status == 2)
        #expect(pastTo.errors.contains("seq 7 is beyond seq 5 (--to)"), "\(pastTo.errors)")
        let reversed = await story.run(access, ["log", "--from", "5", "--to", "3"])
        #expect(reversed.status == 64)
        #expect(reversed.errors.contains("--from 5 is after --to 3"), "\(reversed.errors)")

        // A filter that matches nothing: no row, exit 0, and stderr says so (and which types exist).
        let unknown = await story.run(access, ["log", "--type", "nosuchtype"])
        #expect(unknown.status == 0)
        #expect(unknown.output.isEmpty)
        #expect(unknown.errors.contains("no action of type 'nosuchtype' in seqs 1…8"), "\(unknown.errors)")
        #expect(unknown.errors.contains("append, increment, merge, patch, remove, set, @revert"), "\(unknown.errors)")
        let json = await story.run(access, ["log", "--type", "nosuchtype", "--json"])
        #expect(json.status == 0)
        #expect(json.output.isEmpty, "nothing on stdout with --json: \(json.output)")
        #expect(json.errors.contains("no action of type 'nosuchtype'"), "\(json.errors)")
        let absent = await story.run(access, ["log", "--type", "remove"])
        #expect(absent.status == 0)
        #expect(absent.output.isEmpty)
        #expect(absent.errors == "no action of type 'remove' in seqs 1…8\n")

        // replay --json: "refused" always, with or without --diff.
        let plain = try #require(try await story.run(access, ["replay", "--skip", "8", "--json"]).jsonLines.first)
        #expect(plain == ["value": ["character": ["hp": -2, "name": "Hero"]], "refused": []])
        let diff = try #require(try await story.run(access, ["replay", "--skip", "8", "--diff", "--json"]).jsonLines.first)
        #expect(diff == ["patch": [["op": "replace", "path": "/character/hp", "value": -2]], "refused": []])
    }

    @Test func anEmptyLogSaysItIsEmpty() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let run = await Tool.run(story.live + ["log"])
        #expect(run.status == 0)
        #expect(run.output.isEmpty)
        #expect(run.errors.contains("the log is empty"), "\(run.errors)")
    }

    // MARK: Item 3: the idempotency keys of NDJSON dispatches

    @Test func ndjsonDispatchKeysEachLineSoARetryAppliesNothingNew() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let socket = ["--socket", story.daemon.socketPath]
        let input = #"{"type":"set","payload":{"path":"/n","value":1}}"# + "\n" + #"{"type":"increment","payload":{"path":"/n","by":2}}"# + "\n"
        let first = try await runProgram("reel", ["dispatch", "-", "--idempotency-key", "load-7"] + socket, input: input)
        #expect(first.output == "seq 1\nseq 2\n", "\(first.errors)")
        // The same input with the same key, as a retry after a failure: nothing new.
        let retry = try await runProgram("reel", ["dispatch", "-", "--idempotency-key", "load-7", "--json"] + socket, input: input)
        #expect(retry.status == 0, "\(retry.errors)")
        #expect(try retry.jsonLines == [["seq": 1, "duplicate": true], ["seq": 2, "duplicate": true]])
        #expect(await Tool.run(story.live + ["get", "/n"]).output == "3\n")
        // Line N has the key KEY/N, as documented; KEY itself is another key.
        let lineKey = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/n"}"#, "--idempotency-key", "load-7/1"])
        #expect(lineKey.output == "seq 2 (already dispatched with this idempotency key; nothing new applied)\n", "\(lineKey.errors)")
        let single = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/n"}"#, "--idempotency-key", "load-7"])
        #expect(single.output == "seq 3\n", "\(single.errors)")
        let help = await Tool.run(["dispatch", "--help"])
        #expect(help.output.contains("KEY/0 for the first line"), "\(help.output)")
    }

    // MARK: Item 4: argument errors say what the argument takes

    @Test func aPathWithoutItsSlashIsExplainedWithTheFix() async throws {
        for arguments in [["get", "character/hp"], ["diff", "1", "2", "character/hp"], ["replay", "--skip", "1", "character/hp"], ["watch", "character/hp"]] {
            let run = await Tool.run(arguments)
            #expect(run.status == 64, "\(arguments): \(run.errors)")
            #expect(run.errors.contains("a path is a JSON Pointer"), "\(arguments): \(run.errors)")
            #expect(run.errors.contains("did you mean '/character/hp'?"), "\(arguments): \(run.errors)")
        }
        let tilde = await Tool.run(["get", "/a~2"])
        #expect(tilde.status == 64)
        #expect(tilde.errors.contains("~0 is '~' and ~1 is '/'"), "\(tilde.errors)")
    }

    /// Every option whose value is a seq or a number, found in each command's help: `-1` reaches
    /// it (not "Missing value") and is refused with what the option takes.
    @Test func negativeNumbersAreRefusedWithWhatTheOptionTakes() async throws {
        let directory = try TemporaryDirectory()
        let required: [String: [String]] = [
            "dispatch": ["set", "{}"], "show": ["1"], "diff": ["1", "2"], "replay": ["--skip", "1"], "bisect": ["exists /a"],
            "import": ["-", "--data-dir", directory.sub("new")], "revert": ["1"], "backup": [directory.sub("copy")],
        ]
        var checked: Set<String> = []
        for command in Self.commands {
            let help = await Tool.run([command, "--help"])
            for entry in Self.helpEntries(help.output) {
                guard let match = entry.firstMatch(of: #/^  (--[a-z-]+) <(seq|n)>/#) else { continue }
                let option = String(match.1)
                let run = await Tool.run([command] + required[command, default: []] + [option, "-1"])
                #expect(run.status == 64, "\(command) \(option) -1: \(run.errors)")
                #expect(!run.errors.contains("Missing value"), "\(command) \(option) -1: \(run.errors)")
                #expect(
                    ["a seq is 0 or more", "a count is 1 or more", "a version is 1 or more", "is 0 or more", "a port is 0 to 65535"].contains {
                        run.errors.contains($0)
                    },
                    "\(command) \(option) -1: \(run.errors)"
                )
                checked.insert(option)
            }
        }
        #expect(checked == ["--at", "--from", "--to", "--limit", "--last", "--since", "--count", "--expected-seq", "--checkpoint-every", "--port", "--action-version"])
        // Positional seqs: read as options by argument-parser, caught and explained.
        for arguments in [["show", "-1"], ["diff", "-1", "2"], ["diff", "1", "-2"], ["revert", "-1"]] {
            let run = await Tool.run(arguments)
            #expect(run.status == 64, "\(arguments): \(run.errors)")
            #expect(run.errors.contains("is negative: seqs and counts are 0 or more"), "\(arguments): \(run.errors)")
        }
        let skip = await Tool.run(["replay", "--skip", "-1"])
        #expect(skip.status == 64)
        #expect(skip.errors.contains("--skip takes seqs"), "\(skip.errors)")
        let words = await Tool.run(["get", "--at", "minus-one"])
        #expect(words.status == 64)
        #expect(words.errors.contains("a seq is a whole number, 0 or more"), "\(words.errors)")
    }

    // MARK: Item 5: help lists only what works, each default once

    @Test func everyCommandsHelpListsOnlyWhatItTakesAndEachDefaultOnce() async throws {
        let root = await Tool.run(["--help"])
        for (command, help) in [("reel", root.output)] + (await Self.helps()) {
            let entries = Self.helpEntries(help)
            #expect(!entries.isEmpty, "\(command): no options in\n\(help)")
            for entry in entries {
                #expect(entry.components(separatedBy: "default").count <= 2, "\(command): a default said twice in '\(entry)'")
            }
        }
        // Options a command refuses are not offered; given anyway, they are refused with a reason.
        let story = try await StoryDaemon.started()
        let refused: [(command: [String], option: [String], reason: String)] = [
            (["dispatch", "set", #"{"path":"/n","value":1}"#], ["--data-dir", story.daemon.dataDirectory], "dispatching needs a running daemon"),
            (["revert", "3"], ["--data-dir", story.daemon.dataDirectory], "dispatching needs a running daemon"),
            (["ui", "--no-browser"], ["--json"], "--json: ui prints only the page's URL"),
        ]
        for (command, option, reason) in refused {
            let help = await Tool.run([command[0], "--help"])
            #expect(!help.output.contains(option[0]), "\(command[0]) --help offers \(option[0])")
            let run = await Tool.run(command + option)
            #expect(run.status == 64, "\(command + option): \(run.errors)")
            #expect(run.errors.contains(reason), "\(command + option): \(run.errors)")
        }
        // Before the command too, where people put the options that say where the store is.
        let leading = await Tool.run(["--data-dir", story.daemon.dataDirectory, "revert", "3"])
        #expect(leading.status == 64)
        #expect(leading.errors.contains("dispatching needs a running daemon"), "\(leading.errors)")
    }

    static func helps() async -> [(String, String)] {
        var helps: [(String, String)] = []
        for command in commands {
            let run = await Tool.run([command, "--help"])
            helps.append((command, run.output))
        }
        return helps
    }

    /// An app's `serve` is the daemon under the app's name: its help and messages say
    /// `reel-rpg serve`, not `reeld`; `reeld` itself still says `reeld`.
    @Test func anAppsServeHelpNamesTheApp() async throws {
        let serve = try await runProgram("reel-rpg", ["serve", "--help"])
        #expect(serve.status == 0, "\(serve.errors)")
        #expect(serve.output.contains("USAGE: reel-rpg serve <options>"), "\(serve.output)")
        #expect(!serve.output.contains("reeld"), "\(serve.output)")
        for entry in Self.helpEntries(serve.output) {
            #expect(entry.components(separatedBy: "default").count <= 2, "a default said twice in '\(entry)'")
        }
        let wrong = try await runProgram("reel-rpg", ["serve", "--no-such-flag"])
        #expect(wrong.status == 64)
        #expect(wrong.errors.contains("(see reel-rpg serve --help)"), "\(wrong.errors)")
        let version = try await runProgram("reel-rpg", ["serve", "--version"])
        #expect(version.output.hasPrefix("reel-rpg 0."), "\(version.output)")
        let reeld = try await runProgram("reeld", ["--help"])
        #expect(reeld.output.contains("USAGE: reeld <options>"), "\(reeld.output)")
    }

    // MARK: Item 6: `reel log` on a terminal

    @Test func logOnATerminalShowsTheNewestPageAndHowToSeeMore() async throws {
        let story = try await StoryDaemon.started()
        let socket = ["--socket", story.daemon.socketPath]
        let plain = ["NO_COLOR": "1"]
        func seqs(_ lines: [String]) -> [Int] { lines.compactMap { $0.split(separator: " ").first.flatMap { Int($0) } } }

        // Eight lines: the header, five rows, the note, and the shell's prompt after them.
        let paged = try await PseudoTerminal.run("reel", ["log"] + socket, rows: 8, columns: 120, environment: plain)
        #expect(paged.status == 0, "\(paged.shown)")
        let lines = paged.shown.split(separator: "\n").map(String.init)
        #expect(lines.count == 7, "\(paged.shown)")
        #expect(lines.first?.split(separator: " ") == ["SEQ", "TIME", "TYPE", "PEER", "PAYLOAD"], "\(paged.shown)")
        #expect(seqs(Array(lines.dropFirst())) == [4, 5, 6, 7, 8], "\(paged.shown)")
        #expect(lines.last == "seqs 4…8, the newest 5 of 8 actions; more: --last N, --from SEQ, or --all", "\(paged.shown)")

        let all = try await PseudoTerminal.run("reel", ["log", "--all"] + socket, rows: 8, columns: 120, environment: plain)
        #expect(seqs(all.shown.split(separator: "\n").map(String.init)) == Array(1...8), "\(all.shown)")
        #expect(!all.shown.contains("more:"))
        let last = try await PseudoTerminal.run("reel", ["log", "--last", "2", "--type", "increment"] + socket, rows: 8, columns: 120, environment: plain)
        #expect(seqs(last.shown.split(separator: "\n").map(String.init)) == [7, 8], "\(last.shown)")
        #expect(!last.shown.contains("more:"))
        let filtered = try await PseudoTerminal.run("reel", ["log", "--type", "increment"] + socket, rows: 6, columns: 120, environment: plain)
        #expect(filtered.shown.hasSuffix("seqs 6…8, the newest 3 actions of type 'increment'; more: --last N, --from SEQ, or --all\n"), "\(filtered.shown)")
        // An explicit range is shown whole.
        let range = try await PseudoTerminal.run("reel", ["log", "--from", "2"] + socket, rows: 6, columns: 120, environment: plain)
        #expect(seqs(range.shown.split(separator: "\n").map(String.init)) == Array(2...8), "\(range.shown)")

        // --json, or piped: everything, as a script expects.
        let json = try await PseudoTerminal.run("reel", ["log", "--json"] + socket, rows: 8, columns: 120, environment: plain)
        let actions = try json.shown.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        #expect(actions.map { $0["seq"] } == (1...8).map { .int($0) })
        let piped = try await runProgram("reel", ["log"] + socket)
        #expect(seqs(piped.output.split(separator: "\n").map(String.init)) == Array(1...8), "\(piped.output)")
        #expect(piped.errors.isEmpty, "\(piped.errors)")
        // --last anywhere; with a filter it reads back past the newest actions to find matches.
        let lastJSON = await Tool.run(story.live + ["log", "--last", "3", "--json"])
        #expect(try lastJSON.jsonLines.map { $0["seq"] } == [6, 7, 8])
        let lastSet = await Tool.run(story.offline + ["log", "--last", "3", "--type", "set", "--json"])
        #expect(try lastSet.jsonLines.map { $0["seq"] } == [1])
        let both = await Tool.run(story.live + ["log", "--last", "3", "--limit", "2"])
        #expect(both.status == 64)
    }
}
