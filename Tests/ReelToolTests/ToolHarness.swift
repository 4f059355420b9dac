import Foundation
import ReelConsole
import ReelCore
import ReelJSON
import ReelStore
import ReelTestSupport
import ReelTool
import Testing

/// What one in-process run of a `reel` command printed, and its exit status.
struct ToolRun {
    var status: Int32
    var output: String
    var errors: String

    /// The output's lines, parsed as JSON (for `--json` runs).
    var jsonLines: [JSONValue] {
        get throws {
            try output.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        }
    }

    var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLast(output.hasSuffix("\n") ? 1 : 0) }
}

extension ProgramResult {
    var jsonLines: [JSONValue] {
        get throws {
            try output.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        }
    }
}

/// Runs `reel` commands in this process, with the real parser, sources, sockets and LMDB files,
/// and output captured in memory.
enum Tool {
    static func run<State: StoreState>(
        _ arguments: [String], definition: StoreDefinition<State>, terminal: Bool = false, environment: [String: String] = [:]
    ) async -> ToolRun {
        let output = MemorySink(), errors = MemorySink()
        var context = ToolContext(definition: definition, programName: "reel", environment: environment)
        context.standardOutput = output
        context.standardError = errors
        context.standardOutputIsTerminal = terminal
        context.standardErrorIsTerminal = false
        let status = await ReelTool.run(["reel"] + arguments, context: context)
        return ToolRun(status: status, output: output.text, errors: errors.text)
    }

    static func run(_ arguments: [String], terminal: Bool = false, environment: [String: String] = [:]) async -> ToolRun {
        await run(arguments, definition: .stock, terminal: terminal, environment: environment)
    }
}

/// Where commands read from: the daemon's socket, or its data directory offline (while it runs).
enum Access: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case live, offline

    var testDescription: String { rawValue }
}

/// A real `reeld` on a temporary directory, seeded through `reel dispatch` with a small story:
/// seq 1 sets `/character` to `{hp: 10, name: "Hero"}`, seqs 2…8 each take 2 hp (so hp first
/// reaches 0 at seq 6 and ends at -4). Checkpoints every 5 actions.
final class StoryDaemon: @unchecked Sendable {
    // @unchecked: only immutable references; `TemporaryDirectory` is a path, not declared Sendable.
    let directory: TemporaryDirectory
    let daemon: SpawnedDaemon
    let checkpointEvery: Int

    static let seeded: UInt64 = 8

    init(checkpointEvery: Int = 5) throws {
        self.checkpointEvery = checkpointEvery
        directory = try TemporaryDirectory("reel-tool")
        daemon = SpawnedDaemon(
            dataDirectory: directory.sub("data"), socketPath: directory.sub("reel.sock"),
            extraArguments: ["--checkpoint-every", String(checkpointEvery)]
        )
    }

    /// Starts the daemon and dispatches the story.
    static func started(seed: Bool = true) async throws -> StoryDaemon {
        let story = try StoryDaemon()
        try await story.daemon.start()
        if seed { try await story.seed() }
        return story
    }

    func seed() async throws {
        let first = await Tool.run(live + ["dispatch", "set", #"{"path":"/character","value":{"hp":10,"name":"Hero"}}"#])
        try #require(first.status == 0, "\(first.errors)")
        for _ in 2...Self.seeded {
            let hit = await Tool.run(live + ["dispatch", "increment", #"{"path":"/character/hp","by":-2}"#])
            try #require(hit.status == 0, "\(hit.errors)")
        }
        // Checkpoints are encoded off the write path: the one the story promises is waited for
        // here rather than raced by the commands the tests run next.
        guard checkpointEvery > 0, checkpointEvery <= Self.seeded else { return }
        let promised = JSONValue.int(Int64(checkpointEvery))
        try await waitUntil("the checkpoint at seq \(checkpointEvery)") {
            try await Tool.run(live + ["checkpoints", "--json"]).jsonLines.contains { $0["seq"] == promised }
        }
    }

    var live: [String] { ["--socket", daemon.socketPath] }
    var offline: [String] { ["--data-dir", daemon.dataDirectory] }

    func arguments(_ access: Access) -> [String] { access == .live ? live : offline }

    /// Runs a command against this daemon, live or offline.
    func run(_ access: Access, _ arguments: [String]) async -> ToolRun {
        await Tool.run(arguments + self.arguments(access))
    }
}
