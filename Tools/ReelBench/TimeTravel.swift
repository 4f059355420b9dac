import Foundation
import Histogram
import ReelConsole
import ReelCore
import ReelJSON
import ReelServer
import ReelStore
import ReelTool
import ServiceLifecycle

extension ReelBench {
    /// `reel bisect` and `reel get --at` on a log of `timeTravelSize` actions, through the tool's
    /// real command path (argument parsing, opening the source, the query, JSON output), offline on
    /// the data directory and then live against an in-process server on the same directory.
    ///
    /// The offline figures come first, with nothing else holding the directory: LMDB must not
    /// open one environment twice in a process (`LMDBOpenRegistry` refuses), and both the store
    /// that writes the log and the one the server runs on would.
    func timeTravel() async throws {
        let path = try scratch("time-travel")
        defer {
            if keepTimeTravelLog {
                print("  kept: \(path)/data")
            } else {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        let data = path + "/data"
        let story = HitPointStory(actions: timeTravelSize)
        try await writeLog(of: story, to: data)

        // The same seqs offline and live, so the two figures compare like with like.
        var generator = SystemRandomNumberGenerator()
        let seqs = (0..<getAtSamples).map { _ in UInt64.random(in: 1...UInt64(story.actions), using: &generator) }

        try await measureTimeTravel(of: story, seqs: seqs, source: ["--data-dir", data], label: "offline")

        let store = try Store(path: data, definition: .stock, logger: Self.quietLogger)
        let socket = path + "/reel.sock"
        let server = ReelServer(
            configuration: ServerConfiguration(socketPath: socket), store: store,
            authorize: { _, _ in true }, logger: Self.quietLogger
        )
        let group = ServiceGroup(services: [server], logger: Self.quietLogger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while !FileManager.default.fileExists(atPath: socket) {
                try await Task.sleep(for: .milliseconds(5))
            }
            try await measureTimeTravel(of: story, seqs: seqs, source: ["--socket", socket], label: "live")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await store.close()
    }

    /// Fills `directory` through the real store, in batches of 1,000 actions without fsync (setup,
    /// not a figure). The store is gone when this returns, which releases the environment.
    private func writeLog(of story: HitPointStory, to directory: String) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let options = StoreOptions(checkpointEvery: checkpointEvery, storage: .init(durable: false))
        let store = try Store(path: directory, definition: .stock, options: options, logger: Self.quietLogger)
        var next = 1
        while next <= story.actions {
            let count = min(1_000, story.actions - next + 1)
            try await store.dispatch(batch: (next..<(next + count)).map(story.action(at:)))
            next += count
        }
        await store.close()
        let checkpoints = try store.directory.checkpointHeaders().count
        print(String(
            format: "time travel setup: %d actions logged in %.1f s (durable: false), %d checkpoints, ",
            story.actions, (clock.now - start).seconds, checkpoints
        ) + "'\(HitPointStory.condition)' first holds at seq \(story.firstDownSeq)")
    }

    /// Times `reel bisect` `bisectRuns` times and `reel get --at` at each of `seqs`, checking every
    /// answer against the story, and prints a line per command.
    private func measureTimeTravel(of story: HitPointStory, seqs: [UInt64], source: [String], label: String) async throws {
        var bisect = LatencyFigure()
        var probes = 0
        for _ in 0..<bisectRuns {
            let run = try await Self.reel(["bisect", HitPointStory.condition] + source + ["--json"])
            precondition(
                run.output["seq"]?.intValue == Int64(story.firstDownSeq),
                "reel bisect \(label) answered \(run.output.jsonString), not seq \(story.firstDownSeq)"
            )
            probes = Int(run.output["probes"]?.intValue ?? 0)
            bisect.record(run.elapsed)
        }
        bisect.report("reel bisect \(label) (\(bisectRuns) runs)", note: "\(probes) probes")

        var get = LatencyFigure()
        for seq in seqs {
            let run = try await Self.reel(["get", HitPointStory.hitPointsPath, "--at", String(seq)] + source + ["--json"])
            precondition(
                run.output["value"]?.intValue == story.hitPoints(at: seq),
                "reel get --at \(seq) \(label) answered \(run.output.jsonString), not \(story.hitPoints(at: seq))"
            )
            get.record(run.elapsed)
        }
        get.report("reel get --at \(label) (\(seqs.count) random seqs)")
    }

    /// Runs one `reel` command line in this process, as the stock `reel` executable would, and
    /// returns its JSON output with the time it took, from parsing the arguments to closing what
    /// the command opened: everything but starting a process.
    static func reel(_ arguments: [String]) async throws -> (output: JSONValue, elapsed: Duration) {
        let run = try await reelText(arguments)
        return (try JSONValue(parsing: run.text.trimmingCharacters(in: .whitespacesAndNewlines)), run.elapsed)
    }

    /// Like ``reel(_:)``, for output that is not one JSON value (`reel log --json` prints one per line).
    static func reelText(_ arguments: [String]) async throws -> (text: String, elapsed: Duration) {
        let run = await reelRun(arguments)
        precondition(run.status == 0, "reel \(arguments.joined(separator: " ")) exited \(run.status): \(run.errors)")
        return (run.text, run.elapsed)
    }

    /// Runs one `reel` command line in this process and returns its exit status and outputs.
    static func reelRun(_ arguments: [String]) async -> (status: Int32, text: String, errors: String, elapsed: Duration) {
        var context = ToolContext(definition: .stock, programName: "reel", environment: [:])
        let output = MemorySink()
        let errors = MemorySink()
        context.standardOutput = output
        context.standardError = errors
        context.standardOutputIsTerminal = false
        context.standardErrorIsTerminal = false
        let clock = ContinuousClock()
        let start = clock.now
        let status = await ReelTool.run(["reel"] + arguments, context: context)
        return (status, output.text, errors.text, clock.now - start)
    }
}

/// The log the time-travel figures run on, in the spirit of the RPG example but on the stock
/// reducer (so the stock `reel` can read it): a character loses one HP on every tenth action,
/// while the other nine patch unrelated world state.
///
/// Hits land on seqs 3, 13, 23, …, so `/character/hp <= 0` first holds at a seq known in advance,
/// about 73% into the log and never on a checkpoint (they fall where a commit ends, and the log
/// is written in batches of 1,000).
struct HitPointStory: Sendable {
    static let condition = "/character/hp <= 0"
    static let hitPointsPath = "/character/hp"
    private static let hitEvery = 10
    private static let firstHitSeq = 3

    /// Actions in the log.
    let actions: Int
    /// The character's HP after seq 1, which is also the number of hits that bring it to 0.
    let startingHitPoints: Int

    init(actions: Int) {
        self.actions = actions
        startingHitPoints = max(1, actions * 73 / 100 / Self.hitEvery)
        precondition(firstDownSeq <= UInt64(actions), "a log of \(actions) actions is too short for the story")
    }

    /// The seq of the last hit, the one that brings HP to 0.
    var firstDownSeq: UInt64 {
        UInt64(Self.firstHitSeq + (startingHitPoints - 1) * Self.hitEvery)
    }

    /// What seq `seq` (from 1) dispatches.
    func action(at seq: Int) -> Action {
        if seq == 1 {
            return Action(type: "merge", payload: [
                "character": ["name": "Ayla", "hp": .int(Int64(startingHitPoints))], "world": [:],
            ])
        }
        if seq % Self.hitEvery == Self.firstHitSeq {
            return Action(type: "increment", payload: ["path": .string(Self.hitPointsPath), "by": -1])
        }
        return Action(type: "patch", payload: [["op": "add", "path": .string("/world/k\(seq % 100)"), "value": .int(Int64(seq))]])
    }

    /// `/character/hp` in the state at `seq` (from 1, where the character appears).
    func hitPoints(at seq: UInt64) -> Int64 {
        let first = UInt64(Self.firstHitSeq)
        let hits = seq < first ? 0 : (seq - first) / UInt64(Self.hitEvery) + 1
        return Int64(startingHitPoints) - Int64(hits)
    }
}

/// Latencies of one command, printed as p50, p99 and max in milliseconds.
struct LatencyFigure {
    private var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    mutating func record(_ latency: Duration) {
        _ = histogram.record(UInt64((latency.seconds * 1e6).rounded()))
    }

    var p50Milliseconds: Double { Double(histogram.valueAtPercentile(50)) / 1000 }
    var count: Int { Int(histogram.totalCount) }

    /// Prints one line: the label, the percentiles, then the note in parentheses.
    func report(_ label: String, note: String? = nil) {
        let line = "\(label): " + String(
            format: "p50 %.2f ms  p99 %.2f ms  max %.2f ms",
            Double(histogram.valueAtPercentile(50)) / 1000, Double(histogram.valueAtPercentile(99)) / 1000,
            Double(histogram.max) / 1000
        )
        print(note.map { "\(line)  (\($0))" } ?? line)
    }
}
