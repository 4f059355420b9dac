import ArgumentParser
import Foundation
import Histogram
import Logging
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

/// Prints Reel's performance figures. Nothing here passes or fails: the figures go into notes and
/// issues, measured before and after changes meant to be faster.
@main
struct ReelBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reel-bench",
        abstract: "Measure durable appends, replay speed and state-at-seq latency.",
        discussion: "Build with -c release: swift run -c release reel-bench"
    )

    @Option(help: "Where to put the temporary data directories (removed afterwards).")
    var workDirectory: String = FileManager.default.temporaryDirectory.path

    @Option(help: "Actions in the log used for replay and state-at-seq.")
    var logSize: Int = 1_000_000

    @Option(help: "Checkpoint interval of that log (actions).")
    var checkpointEvery: UInt64 = StoreOptions().checkpointEvery

    @Option(help: "Random seqs sampled for state-at-seq latency.")
    var samples: Int = 1_000

    @Option(help: "Seconds spent on each durable-append batch size.")
    var appendSeconds: Double = 3

    @Flag(help: "Skip the durable-append figures (they are bound by the disk's fsync).")
    var skipAppends = false

    func run() async throws {
        printHeader()
        if !skipAppends {
            for perCommit in [1, 64, 1024] {
                try durableAppends(perCommit: perCommit)
            }
            try await concurrentDispatch(dispatchers: 64)
            for clients in [1, 16, 64] {
                try await socketDispatch(clients: clients, perClient: clients == 1 ? 500 : 100)
            }
        }
        try await replayAndStateAtSeq()
    }

    func printHeader() {
        print("reel-bench: \(ProcessInfo.processInfo.activeProcessorCount) cores, log of \(logSize) actions, checkpoint every \(checkpointEvery)")
    }

    func scratch(_ name: String) throws -> String {
        let path = workDirectory + "/reel-bench-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Stores log their opening and shutdown at `info`; the figures are what matters here.
    static var quietLogger: Logger {
        var logger = Logger(label: "reel-bench")
        logger.logLevel = .warning
        return logger
    }

    /// A simple `patch` action, as the replay target asks: one replace/add at one of 100 keys.
    static func patchAction(_ i: Int) -> Action {
        Action(type: "patch", payload: [["op": "add", "path": .string("/k\(i % 100)"), "value": .int(Int64(i))]])
    }
}
