import Foundation
import Histogram
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore

/// The questions of the history on a large log (issue targets in parentheses, for 10 million
/// actions over about 100,000 leaves): `history changed` first pages for a rare path and for one
/// every action changes (p99 ≤ 20 ms), `blame` of 1,000 leaves (p99 ≤ 50 ms), `find` over the
/// whole log on a path 1% of the actions change (≤ 1 s), the index's share of the log's bytes
/// (≤ 15%) and how fast it is rebuilt (≥ 1 M actions/s).
extension ReelBench {
    /// Where user `k` is: `/users/gG/uK`, 80 groups of 125 users, 1,000 leaves each.
    static func userPath(_ k: Int) -> String { "/users/g\(k % 80)/u\(k)" }

    /// The log: `changesSize` mixed stock actions on `/users/gG/uK` (10,000 users of eight leaves
    /// each, set one by one first); every 10,000th sets `/config/flag` (0.01% of the actions), every 100th
    /// `/level` (1%); every other action changes `/users`.
    static func mixedAction(_ i: Int) -> Action {
        if i % 10_000 == 0 { return Action(type: "set", payload: ["path": "/config/flag", "value": .int(Int64(i / 10_000))]) }
        if i % 100 == 0 { return Action(type: "set", payload: ["path": "/level", "value": .int(Int64(i / 100 % 1_000))]) }
        let k = i &* 7_919 % 10_000
        let user = userPath(k)
        switch i % 5 {
        case 0:
            return Action(type: "set", payload: ["path": .string("\(user)/score"), "value": .int(Int64(i % 1_000))])
        case 1:
            return Action(type: "increment", payload: ["path": .string("\(user)/visits")])
        case 2:
            return Action(type: "merge", payload: ["users": ["g\(k % 80)": ["u\(k)": ["name": .string("n\(i % 97)"), "plan": .string(i % 3 == 0 ? "pro" : "free")]]]])
        case 3:
            return Action(type: "patch", payload: [["op": "add", "path": .string("\(user)/seen"), "value": .int(Int64(i))]])
        default:
            return Action(type: "set", payload: ["path": .string("\(user)/prefs"), "value": ["theme": .string(i % 2 == 0 ? "dark" : "light"), "lang": "en", "tz": .int(Int64(i % 24))]])
        }
    }

    func changes() async throws {
        let path = try scratch("changes")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ContinuousClock()
        let size = changesSize

        // The log, filled without the index (setup, not a figure; no fsync).
        var options = StoreOptions(checkpointEvery: checkpointEvery, storage: .init(durable: false))
        options.changeIndex = false
        let fillStart = clock.now
        do {
            let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
            // 10,000 users of eight leaves each, one `set` each, then the mixed actions on them.
            try await store.dispatch(Action(type: "set", payload: ["path": "", "value": ["users": .object(JSONObject(uniqueKeysWithValues: (0..<80).map { ("g\($0)", JSONValue.object([:])) })), "config": ["flag": 0], "level": 0]]))
            for first in stride(from: 0, to: 10_000, by: 1_000) {
                try await store.dispatch(batch: (first..<(first + 1_000)).map { user in
                    Action(type: "set", payload: [
                        "path": .string(Self.userPath(user)),
                        "value": ["name": "n", "score": 0, "visits": 0, "plan": "free", "seen": 0, "prefs": ["theme": "light", "lang": "en", "tz": 0]],
                    ])
                })
            }
            var next = 10_002
            while next <= size {
                let count = min(1_000, size - next + 1)
                try await store.dispatch(batch: (next..<(next + count)).map(Self.mixedAction))
                next += count
            }
            await store.close()
        }
        print(String(format: "changes: %d mixed actions logged in %.1f s", size, (clock.now - fillStart).seconds))

        // The index built from the log, at the open of a store, and the questions.
        do {
            // The index built from the log, at the open of a store.
            options.changeIndex = true
            let buildStart = clock.now
            let cpuStart = processCPUSeconds()
            let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
            let servingSeconds = (clock.now - buildStart).seconds
            await store.changeIndexCaughtUp()
            let buildSeconds = (clock.now - buildStart).seconds
            // The process's CPU through the build (nothing else runs meanwhile): steadier than the
            // wall time from one phase of a shared machine to the next, to compare two builds by.
            let buildCPU = processCPUSeconds() - cpuStart
            print(String(format: "changes: the store serving %.2f s after the open began (the index built in the background)", servingSeconds))
            print(String(
                format: "changes: the build's CPU %.2f s (%.2f µs per action, %.2f cores busy on average)",
                buildCPU, buildCPU / Double(size) * 1e6, buildCPU / buildSeconds
            ))
            let timeline = store.timeline
            let sizes = try store.directory.logAndChangeIndexBytes()
            print(String(
                format: "changes: index built in %.1f s from the open (%.2f M actions/s, the open's replay from its checkpoint included); index %.1f MiB = %.1f%% of the log's %.1f MiB (target ≤ 15%%, ≥ 1 M/s)",
                buildSeconds, Double(size) / buildSeconds / 1e6, Double(sizes.changeIndex) / 1_048_576,
                100 * Double(sizes.changeIndex) / Double(sizes.log), Double(sizes.log) / 1_048_576
            ))

            // First pages of `history changed`, oldest and newest first, at random windows.
            var generator = SystemRandomNumberGenerator()
            for (label, pointer) in [("0.01% of the actions", "/config/flag"), ("every action", "/users"), ("one leaf", "/users/g17/u17/score")] {
                var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
                let path = try JSONPointer(pointer)
                for sample in 0..<changesSamples {
                    let to = UInt64.random(in: UInt64(size / 2)...UInt64(size), using: &generator)
                    let start = clock.now
                    let page = try timeline.history(to: to, limit: 100, newestFirst: sample % 2 == 1, changed: path)
                    _ = histogram.record(UInt64(((clock.now - start).seconds * 1e6).rounded()))
                    precondition(!page.actions.isEmpty, "no change of \(pointer)")
                }
                print(Self.latencies("history changed \(pointer) (\(label)), first page of 100", histogram, target: "p99 ≤ 20 ms"))
            }

            // Blame of 1,000 leaves, at random seqs of the second half: a group (a subtree of 1,000
            // leaves of the 80,000), and a page of 1,000 leaves of all of them.
            for (label, pointer, rebuilt) in [
                ("a subtree of 1,000 leaves (/users/g7)", "/users/g7", "its part of the state"), ("1,000 leaves of /users", "/users", "each state"),
            ] {
                var blames = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
                let path = try JSONPointer(pointer)
                for _ in 0..<changesSamples {
                    let at = UInt64.random(in: UInt64(size / 2)...UInt64(size), using: &generator)
                    let start = clock.now
                    let result = try timeline.blame(path: path, at: at, limit: 1_000)
                    _ = blames.record(UInt64(((clock.now - start).seconds * 1e6).rounded()))
                    precondition(result.entries.count == 1_000, "blame found \(result.entries.count) leaves")
                }
                print(Self.latencies("blame of \(label) at random seqs (\(rebuilt) rebuilt)", blames, target: "p99 ≤ 50 ms"))
            }
            let users = try JSONPointer("/users")
            var latestBlames = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
            for _ in 0..<changesSamples {
                let now = store.snapshot
                let start = clock.now
                let result = try timeline.blame(path: users, limit: 1_000, known: (now.seq, now.state))
                _ = latestBlames.record(UInt64(((clock.now - start).seconds * 1e6).rounded()))
                precondition(result.entries.count == 1_000, "blame found \(result.entries.count) leaves")
            }
            print(Self.latencies("blame of 1,000 leaves of /users at the latest seq (the store's state)", latestBlames, target: "p99 ≤ 50 ms"))
            // `find` over the whole log, on the path 1% of the actions change.
            let condition = try JSONCondition(parsing: "/level > 900")
            var findSeconds: [Double] = []
            var runs = 0
            for _ in 0..<3 {
                let start = clock.now
                let found = try timeline.find(condition, limit: 100_000)
                findSeconds.append((clock.now - start).seconds)
                runs = found.ranges.count
            }
            print(String(format: "changes: find '/level > 900' over %d actions: %.2f s (median of 3; %d runs; target ≤ 1 s)", size, median(findSeconds), runs))
            await store.close()
        }

        // Opening the store again: the index is up to date, and read whole for damage.
        do {
            let reopenStart = clock.now
            let reopened = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
            print(String(format: "changes: the store opened again in %.2f s (its index up to date, read whole for damage)", (clock.now - reopenStart).seconds))
            await reopened.close()
        }

        // More builds of the index from the log, for a median of the build's figures on a machine
        // whose speed moves from one minute to the next.
        guard changesBuilds > 1 else { return }
        var rates: [Double] = []
        var cpus: [Double] = []
        for build in 2...changesBuilds {
            // Each store in a scope of its own: the directory's lock goes with the store.
            options.changeIndex = false
            do {
                let emptied = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
                try emptied.directory.resetChangeIndex(reducer: StoreDefinition<JSONValue>.stock.identity)
                await emptied.close()
            }
            options.changeIndex = true
            let start = clock.now
            let cpuStart = processCPUSeconds()
            let seconds: Double
            let cpu: Double
            do {
                let store = try Store(path: path, definition: .stock, options: options, logger: Self.quietLogger)
                await store.changeIndexCaughtUp()
                seconds = (clock.now - start).seconds
                cpu = processCPUSeconds() - cpuStart
                await store.close()
            }
            rates.append(Double(size) / seconds / 1e6)
            cpus.append(cpu / Double(size) * 1e6)
            print(String(format: "changes: build %d: %.2f s (%.2f M actions/s), CPU %.2f µs per action", build, seconds, rates.last!, cpus.last!))
        }
        print(String(
            format: "changes: builds 2–%d: median %.2f M actions/s (%.2f–%.2f), CPU median %.2f µs per action (target ≥ 1 M/s)",
            changesBuilds, median(rates), rates.min()!, rates.max()!, median(cpus)
        ))
    }

    static func latencies(_ what: String, _ histogram: Histogram<UInt64>, target: String, section: String = "changes") -> String {
        String(
            format: "\(section): %@ (%d samples): p50 %.2f ms  p99 %.2f ms  max %.2f ms (target %@)",
            what, Int(histogram.totalCount), Double(histogram.valueAtPercentile(50)) / 1000, Double(histogram.valueAtPercentile(99)) / 1000,
            Double(histogram.max) / 1000, target
        )
    }
}
