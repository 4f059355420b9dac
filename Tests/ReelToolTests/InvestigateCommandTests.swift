import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// `bisect` and `verify`, live and offline, including a checkpoint that disagrees with the log.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct InvestigateCommandTests {
    /// `find`: every run of a condition that comes and goes, live and offline alike.
    @Test(arguments: Access.allCases) func findListsEveryRunOfACondition(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        #expect(await Tool.run(story.live + ["revert", "3"]).status == 0)  // hp back to 6 at seq 9
        let runs = await story.run(access, ["find", "/character/hp <= 0"])
        #expect(runs.output == "6..8\n", "\(runs.errors)")
        #expect(try await story.run(access, ["find", "/character/hp <= 0", "--json"]).jsonLines == [["from": 6, "to": 8]])
        #expect(await story.run(access, ["find", "exists /character"]).output == "1..\n", "still holding at the latest seq")
        #expect(try await story.run(access, ["find", "exists /character", "--json"]).jsonLines == [["from": 1]])
        let window = await story.run(access, ["find", "/character/hp <= 0", "--from", "7", "--to", "7"])
        #expect(window.output == "7..7\n")
        let never = await story.run(access, ["find", "/character/hp > 100"])
        #expect(never.status == 1)
        #expect(never.output.isEmpty)
        #expect(never.errors == "/character/hp > 100 holds at no seq in 1…9\n", "\(never.errors)")
        let beyond = await story.run(access, ["find", "exists /character", "--from", "99"])
        #expect(beyond.status == 2)
        #expect(beyond.errors == "reel: seq 99 is beyond the latest seq 9\n", "\(beyond.errors)")
    }

    @Test(arguments: Access.allCases) func bisectFindsTheFirstSeqWhereAConditionHolds(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let human = await story.run(access, ["bisect", "/character/hp <= 0"])
        #expect(human.status == 0, "\(human.errors)")
        #expect(human.lines.first == "first seq where /character/hp <= 0 holds: 6")
        #expect(human.lines.dropFirst().first?.hasSuffix(#"  increment  {"by":-2,"path":"/character/hp"}"#) == true, "\(human.output)")
        let json = try #require(try await story.run(access, ["bisect", "/character/hp < 0", "--json"]).jsonLines.first)
        #expect(json["seq"] == 7)
        #expect(json["latest"] == 8)
        let exists = try #require(try await story.run(access, ["bisect", "exists /character", "--json"]).jsonLines.first)
        #expect(exists["seq"] == 1)
        let initially = await story.run(access, ["bisect", "missing /character/mp"])
        #expect(initially.output == "missing /character/mp holds in the initial state (seq 0)\n")
    }

    @Test(arguments: Access.allCases) func bisectSaysWhenTheConditionNeverHolds(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let never = await story.run(access, ["bisect", "/character/hp < -100"])
        #expect(never.status == 1)
        #expect(never.output == "/character/hp < -100 does not hold at the latest seq (8)\n")
        let json = try #require(try await story.run(access, ["bisect", #"/character/name == "Villain""#, "--json"]).jsonLines.first)
        #expect(json["seq"] == .null)
        // Bounded: a condition that holds later does not hold up to seq 5.
        let bounded = await story.run(access, ["bisect", "/character/hp <= 0", "--to", "5"])
        #expect(bounded.status == 1)
        #expect(bounded.output == "/character/hp <= 0 does not hold at seq 5\n")
        let within = try #require(try await story.run(access, ["bisect", "/character/hp <= 4", "--to", "6", "--json"]).jsonLines.first)
        #expect(within["seq"] == 4)
        #expect(within["latest"] == 6)
    }

    @Test func aBadExpressionIsAUsageErrorThatPointsAtTheMistake() async throws {
        let run = await Tool.run(["bisect", "/character/hp <= ", "--data-dir", "/nonexistent"])
        #expect(run.status == 64)
        #expect(run.errors.contains("column"), "\(run.errors)")
    }

    @Test(arguments: Access.allCases) func verifyReplaysEverythingAndComparesCheckpoints(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let human = await story.run(access, ["verify"])
        #expect(human.status == 0, "\(human.errors)")
        #expect(human.output == "verified 8 actions: 1 checkpoint(s) match\n")
        let json = try #require(try await story.run(access, ["verify", "--json"]).jsonLines.first)
        #expect(json == ["ok": true, "actions": 8, "checkpoints": [5], "skipped": [], "refused": [], "damaged": []])
    }

    /// A checkpoint whose state is not what the log replays to (written behind the store's back,
    /// as a bug in a reducer's determinism would): verify names its seq and shows the difference.
    @Test func verifyReportsTheFirstCheckpointThatDiffersWithTheDiff() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        do {
            let store = try Store(path: path, definition: .stock, options: StoreOptions(checkpointEvery: 3))
            for n in 1...7 {
                try await store.dispatch(Action(type: "set", payload: ["path": "/n", "value": .int(Int64(n))]))
            }
            await store.close()
            let data = store.directory
            try data.commit(CommitBatch(checkpoints: [
                Checkpoint(seq: 6, reducer: StoreDefinition<JSONValue>.stock.identity, time: Timestamp(nanosecondsSince1970: 0), state: ["n": 60]),
            ]))
        }
        let human = await Tool.run(["verify", "--data-dir", path])
        #expect(human.status == 1)
        #expect(human.lines.first == "checkpoint at seq 6 differs from the replay: replaying the log gives another state than the checkpoint holds")
        #expect(human.lines.contains("  ~ /n  → 6"), "\(human.output)")
        #expect(human.lines.last == "1 checkpoint(s) before it matched")
        let json = try #require(try await Tool.run(["verify", "--data-dir", path, "--json"]).jsonLines.first)
        #expect(json["ok"] == false)
        #expect(json["checkpoints"] == [3])
        #expect(json["mismatch"]?["seq"] == 6)
        #expect(json["mismatch"]?["patch"] == [["op": "replace", "path": "/n", "value": 6]])
    }

    /// Segments are verified several at once, but taken in seq order: of two bad checkpoints the
    /// first is reported, with exactly the checkpoints before it as matched, whichever segment
    /// finished first.
    @Test func verifyReportsTheFirstDifferenceAmongSegmentsVerifiedAtOnce() async throws {
        /// Sets of /n to 1…count, with checkpoints at every even seq written here (so that where
        /// they lie does not depend on the checkpoint encoder's pace), `bad` ones holding n × 10.
        func history(count: Int64, bad: Set<Int64>) async throws -> TemporaryDirectory {
            let directory = try TemporaryDirectory()
            let store = try Store(path: directory.sub("data"), definition: .stock, options: StoreOptions(checkpointEvery: 0))
            for n in 1...count {
                try await store.dispatch(Action(type: "set", payload: ["path": "/n", "value": .int(n)]))
            }
            await store.close()
            let identity = StoreDefinition<JSONValue>.stock.identity
            try store.directory.commit(CommitBatch(checkpoints: stride(from: 2, through: count, by: 2).map { seq in
                Checkpoint(seq: UInt64(seq), reducer: identity, time: Timestamp(nanosecondsSince1970: 0), state: ["n": .int(bad.contains(seq) ? seq * 10 : seq)])
            }))
            return directory
        }
        let damaged = try await history(count: 40, bad: [12, 30])
        for _ in 0..<3 {
            let json = try #require(try await Tool.run(["verify", "--data-dir", damaged.sub("data"), "--json"]).jsonLines.first)
            #expect(json["ok"] == false)
            #expect(json["checkpoints"] == [2, 4, 6, 8, 10])
            #expect(json["mismatch"]?["seq"] == 12)
            #expect(json["actions"] == 12)
        }
        let clean = try await history(count: 41, bad: [])
        let json = try #require(try await Tool.run(["verify", "--data-dir", clean.sub("data"), "--json"]).jsonLines.first)
        #expect(json["ok"] == true)
        #expect(json["checkpoints"] == .array((1...20).map { .int(Int64($0 * 2)) } + [41]))
    }
}

/// Damage on disk: `reel verify` names every damaged record and exits 1; no command serves it.
@Suite(.heavy) struct DamageReportTests {
    /// A closed data directory of 12 actions (checkpoints at 4 and 8, and at 12 on shutdown).
    ///
    /// - Returns: the seqs of the checkpoints stored: a checkpoint due while another is being
    ///   encoded comes later, so on a busy machine 8 may be missing or moved.
    @discardableResult
    func written(_ path: String) async throws -> [UInt64] {
        let store = try Store(path: path, definition: .stock, options: StoreOptions(checkpointEvery: 4))
        for n in 1...12 {
            try await store.dispatch(Action(type: "set", payload: ["path": .string("/n\(n)"), "value": .int(Int64(n))]))
        }
        await store.close()
        // Asked of another process: this one still holds the store's LMDB environment.
        let listed = try await runProgram("reel", ["checkpoints", "--data-dir", path, "--json"]).jsonLines
        return listed.compactMap { $0["seq"]?.intValue.map(UInt64.init) }
    }

    @Test func verifyNamesEveryDamagedActionAndReplaysNothing() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        try await written(path)
        try damageStoredRecord(in: path, database: "log", key: seqKey(3), bit: 17)
        try damageStoredRecord(in: path, database: "log", key: seqKey(10), bit: -3)
        let human = await Tool.run(["verify", "--data-dir", path])
        #expect(human.status == 1)
        #expect(human.lines.contains { $0.hasPrefix("action 3 is damaged") }, "\(human.output)")
        #expect(human.lines.contains { $0.hasPrefix("action 10 is damaged") }, "\(human.output)")
        #expect(human.lines.last == "the log is damaged (seq 3, 10): not replayed; restore from a backup")
        let json = try #require(try await Tool.run(["verify", "--data-dir", path, "--json"]).jsonLines.first)
        #expect(json["ok"] == false)
        #expect(json["damaged"]?.arrayValue?.compactMap { $0["seq"] } == [3, 10])
        // Reading past the damage is an error naming it, never data.
        let get = await Tool.run(["get", "--at", "3", "--data-dir", path])
        #expect(get.status != 0)
        #expect(get.output.isEmpty)
        #expect(get.errors.contains("action 3 is damaged"), "\(get.errors)")
    }

    @Test func aLiveDaemonScansItsDataAndVerifyReportsDamageThereToo() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        try await written(path)
        // An old action and a checkpoint: the daemon opens from the newest checkpoint, reading neither.
        try damageStoredRecord(in: path, database: "log", key: seqKey(2), bit: 40)
        try damageStoredRecord(in: path, database: "checkpoints", key: seqKey(4), bit: 90)
        let daemon = SpawnedDaemon(dataDirectory: path, socketPath: directory.sub("reel.sock"))
        try await daemon.start()
        let live = ["--socket", daemon.socketPath]
        let verify = await Tool.run(["verify", "--json"] + live)
        #expect(verify.status == 1)
        let json = try #require(try verify.jsonLines.first)
        #expect(json["damaged"]?.arrayValue?.map { $0["what"] } == ["action", "checkpoint"])
        #expect(json["damaged"]?.arrayValue?.map { $0["seq"] } == [2, 4])
        let get = await Tool.run(["get", "--at", "2"] + live)
        #expect(get.status == 2)
        #expect(get.errors.contains("action 2 is damaged"), "\(get.errors)")
        // The rest of the store works.
        #expect(await Tool.run(["get", "/n12"] + live).output == "12\n")
        #expect(try await daemon.stop() == 0)
    }

    @Test func aDamagedCheckpointAloneFailsVerifyButTheReplayStillRuns() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.sub("data")
        let checkpoints = try await written(path)
        try #require(checkpoints.count >= 2 && checkpoints.last == 12, "checkpoints at \(checkpoints)")
        let damaged = checkpoints[checkpoints.count - 2]  // one before the last, which the replay passes
        try damageStoredRecord(in: path, database: "checkpoints", key: seqKey(damaged), bit: 77)
        let run = await Tool.run(["verify", "--data-dir", path, "--json"])
        #expect(run.status == 1)
        let json = try #require(try run.jsonLines.first)
        #expect(json["ok"] == false)
        #expect(json["checkpoints"] == .array(checkpoints.filter { $0 != damaged }.map { .int(Int64($0)) }))
        #expect(json["damaged"]?.arrayValue?.map { $0["seq"] } == [.int(Int64(damaged))])
    }
}

/// The daemon's `bisect` method, which live `reel bisect` uses, on the wire.
@Suite(.timeLimit(.minutes(1)), .heavy) struct BisectMethodTests {
    @Test func theDaemonBisectsWithItsCheckpointsAndRefusesABadCondition() async throws {
        let story = try await StoryDaemon.started()
        try await TestConnection.open(socketPath: story.daemon.socketPath) { connection in
            let found = try await connection.request(1, "bisect", ["condition": "/character/hp <= 0"])
            #expect(found["result"]?["seq"] == 6)
            #expect(found["result"]?["through"] == 8)
            let bounded = try await connection.request(2, "bisect", ["condition": "/character/hp <= 0", "through": 5])
            #expect(bounded["result"]?["seq"] == .null)
            let bad = try await connection.request(3, "bisect", ["condition": "/character/hp <="])
            #expect(bad["error"]?["code"] == -32602)
            #expect(bad["error"]?["message"]?.stringValue?.contains("column") == true)
            let beyond = try await connection.request(4, "bisect", ["condition": "exists /character", "through": 99])
            #expect(beyond["error"]?["code"] == 1006)
        }
    }
}
