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
        abstract: "Measure durable appends, replay speed, state-at-seq latency and `reel` time travel.",
        discussion: """
            Build with -c release: swift run -c release reel-bench
            One section only: swift run -c release reel-bench --only time-travel
            """
    )

    /// The groups of figures, so that one can be produced without waiting for the others.
    enum Section: String, CaseIterable, ExpressibleByArgument {
        case appends
        case replay
        case timeTravel = "time-travel"
        /// Only when asked for (`--only scale`): it builds a log of millions of actions.
        case scale
        case largeState = "large-state"
        /// Only when asked for (`--only changes`): the change index on a log of millions.
        case changes
        /// Only when asked for (`--only take-over`): `reeld --take-over` under load, on the
        /// `reeld` beside this executable.
        case takeOver = "take-over"
        /// Only when asked for (`--only branches`): branches of a log of millions.
        case branches
        /// Only when asked for (`--only codec`): one action's reading, encoding, decoding and
        /// folding, in loops (nanoseconds per action).
        case codec
    }

    @Option(help: "Where to put the temporary data directories (removed afterwards).")
    var workDirectory: String = FileManager.default.temporaryDirectory.path

    @Option(help: "Actions in the log used for replay and state-at-seq.")
    var logSize: Int = 1_000_000

    @Option(help: "Full replays of that log (and decode-only passes) to take the median of.")
    var replayRuns: Int = 5

    @Option(help: "Checkpoint interval of that log (actions).")
    var checkpointEvery: UInt64 = StoreOptions().checkpointEvery

    @Option(help: "Random seqs sampled for state-at-seq latency.")
    var samples: Int = 1_000

    @Option(help: "Seconds spent on each durable-append batch size.")
    var appendSeconds: Double = 3

    @Flag(help: "Skip the durable-append figures (they are bound by the disk's fsync).")
    var skipAppends = false

    @Option(help: "Actions in the log of the take-over section.")
    var takeOverSize: Int = 1_000_000

    @Option(help: "Clients dispatching through the take-over.")
    var takeOverClients: Int = 50

    @Option(help: "Run only this section: appends, replay, time-travel, large-state, or scale, changes, take-over, branches or codec (which run only when asked for).")
    var only: Section?

    @Option(help: "Actions in the log that `reel bisect` and `reel get --at` run on.")
    var timeTravelSize: Int = 100_000

    @Option(help: "Runs of `reel bisect`, offline and live.")
    var bisectRuns: Int = 20

    @Option(help: "Random seqs read with `reel get --at`, offline and live.")
    var getAtSamples: Int = 200

    @Option(help: "Actions in the log of the scale section (built with `reel import`).")
    var scaleSize: Int = 10_000_000

    @Option(help: "Random seqs read with `reel get --at` in the scale section, offline and live.")
    var scaleSamples: Int = 200

    @Option(help: "Members at the root of the largest state in the large-state section (also a tenth of it, and 1,000).")
    var largeStateKeys: Int = 1_000_000

    @Option(help: "Durable dispatches timed on each state of the large-state section.")
    var largeStateDispatches: Int = 200

    @Option(help: "Actions in the log of the changes section (the change index, history by path, blame, find).")
    var changesSize: Int = 10_000_000

    @Option(help: "Samples of each latency in the changes section.")
    var changesSamples: Int = 200

    @Option(help: "Times the changes section builds its index from the log (the index emptied between builds), for a median.")
    var changesBuilds: Int = 1

    @Option(help: "Actions in the log of the branches section (branches made at its middle).")
    var branchesSize: Int = 10_000_000

    @Option(help: "Branches made in the branches section.")
    var branchCount: Int = 1_000

    @Option(help: "Actions in each loop of the codec section.")
    var codecActions: Int = 200_000

    @Option(help: "Runs of each loop of the codec section, for a median.")
    var codecRuns: Int = 9

    @Flag(help: "Keep the time-travel data directory and print its path, to time the `reel` executable on it.")
    var keepTimeTravelLog = false

    func validate() throws {
        if only == .appends && skipAppends {
            throw ValidationError("--only appends and --skip-appends leave nothing to run")
        }
        guard !runs(.timeTravel) || timeTravelSize >= 100 else {
            throw ValidationError("--time-travel-size must be at least 100, for the character to fall inside the log")
        }
    }

    func run() async throws {
        printHeader()
        if runs(.appends) {
            for perCommit in [1, 64, 1024] {
                try durableAppends(perCommit: perCommit)
            }
            try await concurrentDispatch(dispatchers: 64)
            for clients in [1, 16, 64] {
                try await socketDispatch(clients: clients, perClient: clients == 1 ? 500 : 100)
            }
        }
        if runs(.replay) {
            try await replayAndStateAtSeq()
        }
        if runs(.timeTravel) {
            try await timeTravel()
        }
        if runs(.scale) {
            try await scale()
        }
        if runs(.largeState) {
            try await largeState()
        }
        if runs(.changes) {
            try await changes()
        }
        if runs(.takeOver) {
            try await takeOver()
        }
        if runs(.branches) {
            try await branches()
        }
        if runs(.codec) {
            try codec()
        }
    }

    /// Every section by default; `--skip-appends` leaves out the slow, disk-bound one.
    private func runs(_ section: Section) -> Bool {
        if let only { return section == only }
        return ![.scale, .changes, .takeOver, .branches, .codec].contains(section) && (section != .appends || !skipAppends)
    }

    func printHeader() {
        var header = "reel-bench: \(ProcessInfo.processInfo.activeProcessorCount) cores, checkpoint every \(checkpointEvery)"
        if runs(.replay) { header += ", log of \(logSize) actions" }
        if runs(.timeTravel) { header += ", time travel on \(timeTravelSize) actions" }
        if runs(.scale) { header += ", scale on \(scaleSize) actions" }
        print(header)
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

    /// The same change as a `set`.
    static func setAction(_ i: Int) -> Action {
        Action(type: "set", payload: ["path": .string("/k\(i % 100)"), "value": .int(Int64(i))])
    }

    /// The same change as a `merge`.
    static func mergeAction(_ i: Int) -> Action {
        Action(type: "merge", payload: .object(["k\(i % 100)": .int(Int64(i))]))
    }
}
