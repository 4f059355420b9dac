import Foundation
import ReelCore
import ReelExamples
import ReelJSON
import ReelQuery
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// `bundle`, `import --bundle` and `--bundle` through the real executables: a slice of one data
/// directory carried into another reproduces its digest and every answer of the read commands;
/// other reducers name the first action whose outcome differs; a damaged file is refused.
@Suite(.serialized, .timeLimit(.minutes(10))) struct BundleTests {
    static func environment(rules: Int) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "\(rules)"
        return environment
    }

    static func rpg(_ arguments: [String], rules: Int = 1) async throws -> ProgramResult {
        try await runProgram("reel-rpg", arguments, environment: environment(rules: rules))
    }

    /// `testgen`'s history (``TestgenTests/record(into:)``: seqs 1…9, reverts at 5 and 8; seq 3
    /// leaves the slime at -2 HP by rules 1, at 0 by rules 2), then 10 and 11 attack the slime
    /// with a correlation id.
    static func record(into path: String) async throws {
        try await TestgenTests.record(into: path)
        let store = try Store(path: path, definition: RPGApp.definition(rules: 1))
        for turn in 10...11 {
            try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["enemyId": "slime"]), meta: ActionMeta(correlationId: "turn-\(turn)"))
        }
        await store.close()
    }

    static func digest(of path: String, at seq: UInt64) throws -> String {
        let directory = try DataDirectory(path: path, reducerName: nil, options: .init(readOnly: true))
        let state = try Timeline(directory: directory, definition: RPGApp.definition(rules: 1)).state(at: seq)
        return TimelineQueries<JSONValue>.digest(try state.jsonValue(), seq: seq).sha256
    }

    @Test func aBundleCarriesASliceIntoAnotherDataDirectoryWithItsDigest() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let original = directory.sub("original"), file = directory.sub("slice.bundle"), copy = directory.sub("copy")
        try await Self.record(into: original)

        let written = try await Self.rpg(["bundle", "--data-dir", original, "--from", "3", "--to", "11", "-o", file, "--json"])
        #expect(written.status == 0, "\(written.errors)")
        let report = try JSONValue(parsing: written.output)
        let digest = try Self.digest(of: original, at: 11)
        #expect(try report.value(at: JSONPointer("/digest")) == .string(digest))
        #expect(try report.value(at: JSONPointer("/from")) == 3)
        #expect(try report.value(at: JSONPointer("/actions")) == 9)

        let imported = try await Self.rpg(["import", "--bundle", file, "--data-dir", copy])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.output.contains("the state at seq 11 has the bundle's digest \(digest)"), "\(imported.output)")
        #expect(try Self.digest(of: copy, at: 11) == digest)
        #expect(try Self.digest(of: copy, at: 2) == Self.digest(of: original, at: 2))

        // The copy holds seqs 3…11 as they were logged (time, peer, meta) and nothing before.
        let copied = try DataDirectory(path: copy, reducerName: nil, options: .init(readOnly: true))
        #expect(copied.metadata.origin == 2)
        let timeline = Timeline(directory: copied, definition: RPGApp.definition(rules: 1))
        #expect(try timeline.latestSeq() == 11)
        let source = try DataDirectory(path: original, reducerName: nil, options: .init(readOnly: true))
        for seq in UInt64(3)...11 {
            #expect(try copied.envelope(at: seq) == source.envelope(at: seq), "seq \(seq)")
        }
        #expect(try copied.envelope(at: 2) == nil)
        #expect(throws: StoreError.self) { try timeline.state(at: 1) }
        #expect(try timeline.verify().isClean)

        // Every read command answers from the bundle as from the directory it came from.
        for command in [
            ["get", "--at", "6"], ["get", "/enemies/0", "--at", "9"], ["log", "--from", "3", "--to", "9"], ["show", "5"], ["diff", "3", "9"],
            ["blame", "/enemies/0/hp", "--at", "9"], ["replay", "--skip", "4", "--to", "9"], ["find", "/enemies/1/hp < 20"],
            ["log", "--correlation", "turn-11"],
        ] {
            let fromOriginal = try await Self.rpg(command + ["--json", "--data-dir", original])
            let fromBundle = try await Self.rpg(command + ["--json", "--bundle", file])
            #expect(fromBundle.status == 0, "\(command): \(fromBundle.errors)")
            #expect(fromBundle.output == fromOriginal.output, "\(command)")
            #expect(!fromOriginal.output.isEmpty, "\(command): \(fromOriginal.errors)")
        }
        let bisected = try await Self.rpg(["bisect", "/enemies/1/hp < 20", "--json", "--bundle", file])
        #expect(try JSONValue(parsing: bisected.output).value(at: JSONPointer("/seq")) == 6, "\(bisected.output)\(bisected.errors)")
        let before = try await Self.rpg(["get", "--at", "1", "--bundle", file])
        #expect(before.status != 0)
        #expect(before.errors.contains("seq 1 is before this history's start"), "\(before.errors)")
        let stats = try await Self.rpg(["stats", "--data-dir", copy])
        #expect(stats.output.contains("starts after"), "\(stats.output)")
    }

    @Test func otherReducersNameTheFirstActionWhoseOutcomeDiffers() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let original = directory.sub("original"), file = directory.sub("slice.bundle"), copy = directory.sub("copy")
        try await Self.record(into: original)
        let written = try await Self.rpg(["bundle", "--data-dir", original, "--from", "2", "--to", "11", "-o", file])
        #expect(written.status == 0, "\(written.errors)")

        // Rules 2: an enemy's HP stops at zero, so seq 3 leaves the slime at 0, not -2.
        let imported = try await Self.rpg(["import", "--bundle", file, "--data-dir", copy], rules: 2)
        #expect(imported.status == 1, "\(imported.output)")
        #expect(imported.errors.contains("recorded by rpg@1; this program folds with rpg@2"), "\(imported.errors)")
        #expect(imported.errors.contains("after seq 3 (rpg/attackEnemy) the state differs from the recorded one in 1 field:"), "\(imported.errors)")
        #expect(imported.errors.contains("/enemies/0/hp: expected -2, got 0"), "\(imported.errors)")
        #expect(!FileManager.default.fileExists(atPath: copy))

        // Read, it is folded by these reducers all the same, and says so.
        let read = try await Self.rpg(["get", "/enemies/0/hp", "--at", "3", "--bundle", file], rules: 2)
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        #expect(read.errors.contains("the states shown are this program's"), "\(read.errors)")

        // A program of another reducer altogether is refused by the data directory it would make.
        let stock = try await runProgram("reel", ["import", "--bundle", file, "--data-dir", copy])
        #expect(stock.status != 0)
        #expect(!FileManager.default.fileExists(atPath: copy + "/data.mdb"))
    }

    @Test func aDamagedOrForeignFileIsRefusedAndNothingIsMade() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let original = directory.sub("original"), file = directory.sub("slice.bundle"), copy = directory.sub("copy")
        try await Self.record(into: original)
        let written = try await Self.rpg(["bundle", "--data-dir", original, "--from", "3", "--to", "9", "-o", file])
        #expect(written.status == 0, "\(written.errors)")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))

        let foreign = directory.sub("notes.txt")
        try "not a bundle\n".write(toFile: foreign, atomically: true, encoding: .utf8)
        let cut = directory.sub("cut.bundle")
        try Data(bytes.prefix(bytes.count / 2)).write(to: URL(fileURLWithPath: cut))
        bytes[bytes.count / 2] ^= 0x5A
        let flipped = directory.sub("flipped.bundle")
        try Data(bytes).write(to: URL(fileURLWithPath: flipped))
        for (path, reason) in [(foreign, "it is not gzip-compressed"), (cut, "its compressed data is damaged"), (flipped, "")] {
            let imported = try await Self.rpg(["import", "--bundle", path, "--data-dir", copy])
            #expect(imported.status == 65, "\(path): \(imported.errors)")
            #expect(imported.errors.contains("is not a bundle this program reads: \(reason)"), "\(imported.errors)")
            #expect(!FileManager.default.fileExists(atPath: copy))
            let read = try await Self.rpg(["log", "--bundle", path])
            #expect(read.status == 65, "\(read.errors)")
        }
    }

    /// Values redacted in the state stay hidden wherever an action carries them, or the bundle is
    /// refused; the redacted bundle still replays to its own digest.
    @Test func redactedValuesAppearNowhereInTheFile() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let data = directory.sub("data"), file = directory.sub("slice.bundle"), copy = directory.sub("copy")
        do {
            let store = try Store(path: data, definition: .stock)
            try await store.dispatch(Action(type: "set", payload: ["path": "/users", "value": ["u1": ["email": "ada@example.com", "plan": "free"]]]))
            try await store.dispatch(Action(type: "set", payload: ["path": "/users/u1/plan", "value": "pro"]))
            try await store.dispatch(Action(type: "set", payload: ["path": "/users/u2", "value": ["email": "bob@example.com", "plan": "free"]]))
            try await store.dispatch(Action(type: "increment", payload: ["path": "/visits"]))
            try await store.dispatch(Action(type: "patch", payload: [["op": "add", "path": "/users/u3", "value": ["email": "cy@example.com"]]]))
            // A copy from a part of the state that is not redacted into one that is.
            try await store.dispatch(Action(type: "set", payload: ["path": "/public", "value": "dee@example.com"]))
            try await store.dispatch(Action(type: "patch", payload: [["op": "copy", "from": "/public", "path": "/users/u1/email"]]))
            await store.close()
        }
        // A stock `set` writes its `value` at its `path`: the email it carries is redacted where
        // it lands.
        let written = try await runProgram("reel", ["bundle", "--data-dir", data, "--from", "2", "--to", "5", "-o", file, "--redact", "/users/*/email"])
        #expect(written.status == 0, "\(written.errors)")
        let text = try await runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -dc < '\(file)'"])
        #expect(!text.output.contains("example.com"))
        #expect(text.output.contains("redacted-1"))
        let imported = try await runProgram("reel", ["import", "--bundle", file, "--data-dir", copy])
        #expect(imported.status == 0, "\(imported.errors)")

        // A value copied into a redacted part from one that is not: refused, saying so.
        let leaking = try await runProgram("reel", ["bundle", "--data-dir", data, "--from", "2", "--to", "7", "-o", file + "2", "--redact", "/users/*/email"])
        #expect(leaking.status == 64)
        #expect(leaking.errors.contains("seq 7 (patch) writes a value at /users/u1/email that --redact hides in the state; it comes from a part of the state --redact does not hide"), "\(leaking.errors)")
        #expect(!FileManager.default.fileExists(atPath: file + "2"))
    }

    /// A daemon on a directory made from a bundle goes on where the bundle ended, and a restart
    /// (recovery from its checkpoints) finds everything.
    @Test func aDaemonGoesOnFromAnImportedBundle() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let data = directory.sub("data"), file = directory.sub("slice.bundle"), copy = directory.sub("copy")
        do {
            let store = try Store(path: data, definition: .stock)
            for n in 1...5 { try await store.dispatch(Action(type: "set", payload: ["path": .string("/k\(n)"), "value": .int(Int64(n))])) }
            await store.close()
        }
        #expect(try await runProgram("reel", ["bundle", "--data-dir", data, "--from", "3", "--to", "5", "-o", file]).status == 0)
        #expect(try await runProgram("reel", ["import", "--bundle", file, "--data-dir", copy]).status == 0)
        for round in 1...2 {
            let daemon = SpawnedDaemon(dataDirectory: copy, socketPath: directory.sub("reel.sock"))
            try await daemon.start()
            let sent = try await runProgram("reel", ["dispatch", "increment", #"{"path":"/k1"}"#, "--socket", daemon.socketPath])
            #expect(sent.status == 0, "\(sent.errors)")
            #expect(sent.output.contains("seq \(5 + round)"), "\(sent.output)")
            let now = try await runProgram("reel", ["get", "/k1", "--socket", daemon.socketPath])
            #expect(now.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(1 + round)")
            let log = try await runProgram("reel", ["log", "--json", "--socket", daemon.socketPath])
            #expect(log.output.split(separator: "\n").count == 3 + round, "\(log.output)")
            #expect(try await daemon.stop() == 0)
        }
        let verified = try await runProgram("reel", ["verify", "--data-dir", copy])
        #expect(verified.status == 0, "\(verified.output)\(verified.errors)")
        #expect(verified.output.contains("verified 5 actions"), "\(verified.output)")
    }

    /// The size target: 10,000 stock actions of a mixed load (with the dispatching program's
    /// provenance and a correlation id each) in at most 1 MB.
    @Test func tenThousandStockActionsFitInAMegabyte() async throws {
        let directory = try TemporaryDirectory("reel-bundle")
        let data = directory.sub("data"), file = directory.sub("load.bundle"), copy = directory.sub("copy")
        do {
            var options = StoreOptions()
            options.storage.durable = false
            let store = try Store(path: data, definition: .stock, options: options)
            try await store.dispatch(Action(type: "set", payload: ["path": "/users", "value": [:]]))
            for i in 1...10_000 {
                let k = i &* 7_919 % 1_000
                let action: Action = switch i % 4 {
                case 0: Action(type: "set", payload: ["path": .string("/users/u\(k)"), "value": ["score": .int(Int64(i % 1_000)), "plan": i % 3 == 0 ? "pro" : "free"]])
                case 1: Action(type: "increment", payload: ["path": .string("/visits")])
                case 2: Action(type: "merge", payload: ["users": [.init("u\(k)"): ["name": .string("n\(i % 97)")]]])
                default: Action(type: "patch", payload: [["op": "add", "path": "/last", "value": .int(Int64(i))]])
                }
                try await store.dispatch(action, meta: ActionMeta(correlationId: "request-\(i)"))
            }
            await store.close()
        }
        let written = try await runProgram("reel", ["bundle", "--data-dir", data, "--from", "2", "--to", "10001", "-o", file, "--json"])
        #expect(written.status == 0, "\(written.errors)")
        let bytes = try #require(try JSONValue(parsing: written.output).value(at: JSONPointer("/bytes"))?.intValue)
        #expect(bytes <= 1_000_000, "\(bytes) bytes")
        let imported = try await runProgram("reel", ["import", "--bundle", file, "--data-dir", copy])
        #expect(imported.status == 0, "\(imported.errors)")
    }
}
