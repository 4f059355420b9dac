import Foundation
import ReelJSON

extension ReelBench {
    /// The figures of a long log, through the real executables: `reel import` builds it from NDJSON
    /// (the story of the time-travel section, `scaleSize` actions), `reeld` starts on it, and the
    /// time-travel commands run on it offline and live. Prints what the reads-at-scale targets
    /// name: how soon the daemon answers, state at a random seq, bisect, a diff between distant
    /// seqs, history pages at the start, middle and end, and the peak memory of each process.
    func scale() async throws {
        let path = try scratch("scale")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = path + "/data"
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let reel = bin + "/reel"
        let story = HitPointStory(actions: scaleSize)

        // The log, from `reel import` reading an export on its standard input.
        let imported = try Subprocess.run(reel, ["import", "-", "--data-dir", data, "--json"]) { input in
            Self.writeExport(of: story, to: input)
        }
        precondition(imported.status == 0, "reel import exited \(imported.status)")
        let report = try JSONValue(parsing: imported.output.trimmingCharacters(in: .whitespacesAndNewlines))
        let dataBytes = (try? FileManager.default.attributesOfItem(atPath: data + "/data.mdb")[.size] as? Int) ?? 0
        print(String(
            format: "scale: reel import of %d actions: %.1f s (%.0f actions/s, the export written beside it), peak %d MiB; %d checkpoints, data file %d MiB",
            story.actions, imported.elapsed.seconds, Double(story.actions) / imported.elapsed.seconds,
            imported.maxResidentKiB / 1024, report["checkpoints"]?.intValue ?? -1, dataBytes >> 20
        ))

        var generator = SystemRandomNumberGenerator()
        let seqs = (0..<scaleSamples).map { _ in UInt64.random(in: 1...UInt64(story.actions), using: &generator) }
        try await measureScale(of: story, seqs: seqs, source: ["--data-dir", data], label: "offline")

        // Peak memory of `reel` itself, one process per command.
        var peaks: [String] = []
        let (near, far) = Self.diffEnds(story)
        for (name, arguments) in [
            ("get --at", ["get", HitPointStory.hitPointsPath, "--at", String(seqs[0])]),
            ("bisect", ["bisect", HitPointStory.condition]),
            ("diff", ["diff", String(near), String(far)]),
            ("log", ["log", "--from", String(far), "--limit", "100"]),
        ] {
            let run = try Subprocess.run(reel, arguments + ["--data-dir", data, "--json"])
            precondition(run.status == 0, "reel \(arguments.joined(separator: " ")) exited \(run.status)")
            peaks.append(String(format: "%@ %d MiB (%.0f ms)", name, run.maxResidentKiB / 1024, run.elapsed.seconds * 1000))
        }
        print("  reel processes, offline, peak memory (and wall time with the process start): " + peaks.joined(separator: ", "))

        // The daemon: from exec to its first answer, then the same commands live.
        let socket = path + "/reel.sock"
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: bin + "/reeld")
        daemon.arguments = ["--data-dir", data, "--socket", socket, "--log-level", "warning"]
        let clock = ContinuousClock()
        let launched = clock.now
        try daemon.run()
        defer {
            if daemon.isRunning {
                daemon.terminate()
                daemon.waitUntilExit()
            }
        }
        while await Self.reelRun(["stats", "--socket", socket, "--json"]).status != 0 {
            guard daemon.isRunning else { fatalError("reeld exited with status \(daemon.terminationStatus)") }
            try await Task.sleep(for: .milliseconds(2))
        }
        let answeredAfter = clock.now - launched
        print(String(format: "  reeld on %d actions: answers %.0f ms after it is started", story.actions, answeredAfter.seconds * 1000))
        try await measureScale(of: story, seqs: seqs, source: ["--socket", socket], label: "live")
        let daemonPeak = Subprocess.peakResidentKiB(of: daemon.processIdentifier) ?? -1
        daemon.terminate()
        daemon.waitUntilExit()
        print("  reeld peak memory after the live commands: \(daemonPeak / 1024) MiB")
    }

    /// State at `seqs`, `bisect`, a diff across 80% of the log and history pages at three places,
    /// each checked against the story, with their latencies.
    private func measureScale(of story: HitPointStory, seqs: [UInt64], source: [String], label: String) async throws {
        var get = LatencyFigure()
        for seq in seqs {
            let run = try await Self.reel(["get", HitPointStory.hitPointsPath, "--at", String(seq)] + source + ["--json"])
            precondition(run.output["value"]?.intValue == story.hitPoints(at: seq), "reel get --at \(seq) \(label): \(run.output.jsonString)")
            get.record(run.elapsed)
        }
        get.report("  reel get --at \(label) (\(seqs.count) random seqs)")

        var bisect = LatencyFigure()
        for _ in 0..<5 {
            let run = try await Self.reel(["bisect", HitPointStory.condition] + source + ["--json"])
            precondition(run.output["seq"]?.intValue == Int64(story.firstDownSeq), "reel bisect \(label): \(run.output.jsonString)")
            bisect.record(run.elapsed)
        }
        bisect.report("  reel bisect \(label) (5 runs)")

        var diff = LatencyFigure()
        let (from, to) = Self.diffEnds(story)
        for _ in 0..<5 {
            let run = try await Self.reel(["diff", String(from), String(to)] + source + ["--json"])
            precondition(run.output["patch"]?.arrayValue?.isEmpty == false, "reel diff \(label): \(run.output.jsonString)")
            diff.record(run.elapsed)
        }
        diff.report("  reel diff \(from) \(to) \(label) (5 runs)")

        var pages: [String] = []
        for start in [UInt64(1), UInt64(story.actions) / 2, UInt64(story.actions) - 99] {
            var page = LatencyFigure()
            for _ in 0..<5 {
                let run = try await Self.reelText(["log", "--from", String(start), "--limit", "100"] + source + ["--json"])
                precondition(run.text.split(separator: "\n").count == 100, "reel log --from \(start) \(label) gave no page of 100")
                page.record(run.elapsed)
            }
            pages.append(String(format: "from %d p50 %.2f ms", start, page.p50Milliseconds))
        }
        print("  reel log --limit 100 \(label): " + pages.joined(separator: ", "))
    }

    /// Two seqs 80% of the log apart, neither on a checkpoint (both ends are rebuilt by replay).
    private static func diffEnds(_ story: HitPointStory) -> (UInt64, UInt64) {
        (UInt64(story.actions) / 10 + 4_321, UInt64(story.actions) * 9 / 10 - 3_217)
    }

    /// Writes the story as `reel export` would, one NDJSON line per action.
    private static func writeExport(of story: HitPointStory, to handle: FileHandle) {
        var chunk = ""
        chunk.reserveCapacity(1 << 20)
        for seq in 1...story.actions {
            let action = story.action(at: seq)
            chunk += #"{"payload":\#(action.payload.jsonString),"peer":{"gid":0,"pid":1,"uid":0},"seq":\#(seq),"#
            chunk += #""time":"2026-01-01T00:00:00Z","type":"\#(action.type)"}"# + "\n"
            if chunk.utf8.count >= 1 << 20 {
                guard (try? handle.write(contentsOf: Data(chunk.utf8))) != nil else { return }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try? handle.write(contentsOf: Data(chunk.utf8))
    }
}
