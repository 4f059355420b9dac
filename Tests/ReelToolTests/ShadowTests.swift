import Foundation
import ReelCore
import ReelExamples
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// `APP shadow`: two versions of the RPG's rules (`REEL_RPG_RULES`: version 2 stops an enemy's
/// HP at zero) over a real history, through the real executables, against the brute force (both
/// versions' states rebuilt at every seq and compared part by part).
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct ShadowTests {
    /// A history written by version 1: attacks on random enemies, hits taken, saves loaded.
    static func history(in path: String, count: Int, seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let store = try Store(
            path: path, definition: RPGApp.definition, options: StoreOptions(checkpointEvery: 17, storage: .init(durable: false))
        )
        for _ in 0..<count {
            let enemy = Bool.random(using: &random) ? "slime" : "goblin"
            let action: Action
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                action = Action(type: "rpg/setSaveData", payload: [
                    "slot": "autosave", "character": ["name": "Hero", "hp": 30, "attack": 7],
                    "enemies": [["id": "slime", "name": "Slime", "hp": 12, "attack": 3], ["id": "goblin", "name": "Goblin", "hp": 20, "attack": 5]],
                ])
            case 1, 2: action = Action(type: "rpg/attackCharacter", payload: ["enemyId": .string(enemy)])
            default: action = Action(type: "rpg/attackEnemy", payload: ["enemyId": .string(enemy)])
            }
            _ = try await store.dispatch(action)
        }
        await store.close()
    }

    /// The first seq at which each top-level part of the state differs between the versions.
    static func bruteForce(_ path: String) throws -> [String: UInt64] {
        let directory = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        let one = Timeline(directory: directory, definition: RPGApp.definition(rules: 1))
        let two = Timeline(directory: directory, definition: RPGApp.definition(rules: 2))
        var first: [String: UInt64] = [:]
        for seq in 1...(try one.latestSeq()) {
            let a = try one.state(at: seq).jsonValue(), b = try two.state(at: seq).jsonValue()
            for part in ["character", "enemies", "saveData"] where first["/" + part] == nil && a[part] != b[part] {
                first["/" + part] = seq
            }
        }
        return first
    }

    /// The seqs whose action version 2's reducers refuse in a replay of the whole log.
    static func refusedByVersionTwo(_ path: String) throws -> [UInt64] {
        let directory = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        let two = Timeline(directory: directory, definition: RPGApp.definition(rules: 2))
        return try two.reconstruct(at: two.latestSeq()).refused.map(\.seq)
    }

    /// A baseline executable: `reel-rpg` with the rules of version 1.
    static func baseline(in directory: borrowing TemporaryDirectory) throws -> String {
        let script = directory.sub("rpg-v1")
        try "#!/bin/sh\nREEL_RPG_RULES=1 exec '\(try PackageExecutable.url("reel-rpg").path)' \"$@\"\n".write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        return script
    }

    @Test(arguments: [(3, 1), (11, 16), (12, 1_000)] as [(UInt64, Int)])
    func theFirstSeqWhereAPartDiffersIsTheBruteForcesOne(seed: UInt64, every: Int) async throws {
        let directory = try TemporaryDirectory("reel-shadow")
        let data = directory.sub("data")
        try await Self.history(in: data, count: 120, seed: seed)
        let expected = try Self.bruteForce(data)
        #expect(!expected.isEmpty, "the history reaches a difference between the rules")
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "2"
        let run = try await runProgram(
            "reel-rpg", ["shadow", "--baseline", try Self.baseline(in: directory), "--data-dir", data, "--every", "\(every)", "--json"],
            environment: environment
        )
        #expect(run.status == (expected.isEmpty ? 0 : 1), "\(run.errors)")
        let report = try JSONValue(parsing: run.output)
        #expect(report["same"] == .bool(expected.isEmpty))
        #expect(report["actions"] == 120)
        guard case .array(let parts)? = report["parts"] else {
            Issue.record("no parts in \(run.output)")
            return
        }
        #expect(parts.compactMap { $0["path"]?.stringValue } == ["/character", "/enemies", "/saveData"])
        for part in parts {
            let path = part["path"]?.stringValue ?? ""
            let seq = expected[path]
            #expect(part["same"] == .bool(seq == nil), "\(path)")
            #expect(part["seq"]?.intValue.map(UInt64.init) == seq, "\(path): every \(every), seed \(seed)")
            if seq != nil {
                #expect(part["action"]?["type"] == "rpg/attackEnemy", "\(path): only attacks on enemies differ")
                #expect(part["patch"] != nil)
            }
        }
        // Version 2 refuses attacks on a defeated enemy, which version 1 folded.
        let refused = try Self.refusedByVersionTwo(data)
        #expect(!refused.isEmpty, "the history attacks a defeated enemy")
        #expect(report["refusedByThisOnly"] == .array(refused.map { .int(Int64($0)) }), "seed \(seed)")
        #expect(report["refusedByBaselineOnly"] == [])
        // The change of rules touches the enemies' state only: left out, every part is the same
        // (the refusals still count).
        #expect(Set(expected.keys) == ["/enemies"])
        let ignoring = try await runProgram(
            "reel-rpg", ["shadow", "--baseline", try Self.baseline(in: directory), "--data-dir", data, "--ignore", "/enemies", "--json"],
            environment: environment
        )
        #expect(ignoring.status == (refused.isEmpty ? 0 : 1), "\(ignoring.errors)")
        let ignored = try JSONValue(parsing: ignoring.output)["parts"]?.arrayValue ?? []
        #expect(ignored.compactMap { $0["path"]?.stringValue } == ["/character", "/saveData"])
        #expect(ignored.allSatisfy { $0["same"] == true })
    }

    /// A baseline built with a Reel from before digests could be chosen knows only canonical ones:
    /// here, version 1 behind filters that drop the choice from the requests and the answers.
    static func olderBaseline(in directory: borrowing TemporaryDirectory) throws -> String {
        let script = directory.sub("rpg-v1-older")
        let program = try PackageExecutable.url("reel-rpg").path
        try """
            #!/bin/sh
            sed -u -e 's/,"digest":"[a-z]*"//' -e 's/"digest":"[a-z]*",//' \
              | REEL_RPG_RULES=1 '\(program)' "$@" \
              | sed -u -e 's/"digest":"[a-z]*",//' -e 's/,"digest":"[a-z]*"//'
            """.write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        return script
    }

    @Test func aBaselineThatDigestsOnlyCanonicallyIsComparedCanonically() async throws {
        let directory = try TemporaryDirectory("reel-shadow")
        let data = directory.sub("data")
        try await Self.history(in: data, count: 80, seed: 11)
        let expected = try Self.bruteForce(data)
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "2"
        for baseline in [try Self.baseline(in: directory), try Self.olderBaseline(in: directory)] {
            let run = try await runProgram(
                "reel-rpg", ["shadow", "--baseline", baseline, "--data-dir", data, "--every", "16", "--json"], environment: environment
            )
            let parts = try JSONValue(parsing: run.output)["parts"]?.arrayValue ?? []
            let found = Dictionary(uniqueKeysWithValues: parts.compactMap { part in
                part["seq"]?.intValue.map { (part["path"]?.stringValue ?? "", UInt64($0)) }
            })
            #expect(found == expected, "\(baseline): \(run.output) \(run.errors)")
        }
        // The worker digests as asked, and canonically when not asked (as an older shadow asks).
        let asked = try await runProgram(
            "reel-rpg", ["shadow-worker", "--data-dir", data], input: #"{"digests":[],"digest":"structural"}"# + "\n" + #"{"digests":[]}"# + "\n"
        )
        let answers = asked.output.split(separator: "\n").map { try? JSONValue(parsing: String($0)) }
        #expect(answers.map { $0?["digest"] } == ["structural", "canonical"], "\(asked.output)")
    }

    /// A baseline that does not say who it is (as one from before the question): no checkpoint
    /// pass, the two versions fold side by side from the start.
    static func anonymousBaseline(in directory: borrowing TemporaryDirectory) throws -> String {
        let script = directory.sub("rpg-v1-anonymous")
        try """
            #!/bin/sh
            sed -u -e 's/"identity"/"who"/' | REEL_RPG_RULES=1 '\(try PackageExecutable.url("reel-rpg").path)' "$@"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        return script
    }

    /// Where the baseline's own checkpoints lie within `--every` of each other, this version alone
    /// folds the intervals between them, as far as they agree, and the report is the one the two
    /// versions folding side by side give.
    @Test(arguments: [7, 21, 33] as [UInt64])
    func theBaselinesCheckpointsGiveTheReportOfTheFullReplay(seed: UInt64) async throws {
        let directory = try TemporaryDirectory("reel-shadow")
        let data = directory.sub("data")
        try await Self.history(in: data, count: 300, seed: seed)
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "2"
        func report(_ baseline: String, every: Int) async throws -> JSONValue {
            let run = try await runProgram(
                "reel-rpg", ["shadow", "--baseline", baseline, "--data-dir", data, "--every", "\(every)", "--json"], environment: environment
            )
            return try JSONValue(parsing: run.output)
        }
        for every in [17, 40] {
            var viaCheckpoints = try await report(try Self.baseline(in: directory), every: every)
            let sideBySide = try await report(try Self.anonymousBaseline(in: directory), every: every)
            #expect(sideBySide["baselineCheckpointsThrough"] == nil)
            // (Where the checkpoints lie depends on the encoder's pace: only that the pass stopped
            // somewhere on the way, if it ran.)
            if let reached = viaCheckpoints["baselineCheckpointsThrough"]?.intValue {
                #expect(reached > 0 && reached <= 300, "\(viaCheckpoints)")
            }
            if case .object(var members) = viaCheckpoints {
                members["baselineCheckpointsThrough"] = nil
                viaCheckpoints = .object(members)
            }
            #expect(viaCheckpoints == sideBySide, "seed \(seed), every \(every)")
        }
        // Checkpoints further apart than --every would compare less often than asked: no pass.
        #expect(try await report(try Self.baseline(in: directory), every: 16)["baselineCheckpointsThrough"] == nil)

        // The same rules: the checkpoints carry it to the end, and the baseline folds nothing.
        environment["REEL_RPG_RULES"] = "1"
        let same = try await runProgram(
            "reel-rpg", ["shadow", "--baseline", try Self.baseline(in: directory), "--data-dir", data, "--json"], environment: environment
        )
        #expect(same.status == 0, "\(same.errors)")
        let sameReport = try JSONValue(parsing: same.output)
        #expect(sameReport["same"] == true)
        #expect(sameReport["baselineCheckpointsThrough"] == 300)
    }

    @Test func theSameRulesAreTheSame() async throws {
        let directory = try TemporaryDirectory("reel-shadow")
        let data = directory.sub("data")
        try await Self.history(in: data, count: 40, seed: 5)
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "1"
        let run = try await runProgram(
            "reel-rpg", ["shadow", "--baseline", try Self.baseline(in: directory), "--data-dir", data, "/enemies/0/hp", "/character"],
            environment: environment
        )
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == "/character  same\n/enemies/0/hp  same\nthe same over 40 actions\n")
        // The stock reducer does not fold the RPG's history: said, not tried.
        let stock = try await runProgram("reel", ["shadow", "--baseline", try Self.baseline(in: directory), "--data-dir", data])
        #expect(stock.status == 2)
        #expect(stock.errors.contains("made for reducer 'rpg'"), "\(stock.errors)")
        let notAnApp = try await runProgram("reel-rpg", ["shadow", "--baseline", "/bin/true", "--data-dir", data])
        #expect(notAnApp.status == 69)
        #expect(notAnApp.errors.contains("exited without answering"), "\(notAnApp.errors)")
    }
}
