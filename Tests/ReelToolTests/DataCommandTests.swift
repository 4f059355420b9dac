import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelTestSupport
import Testing

/// `export`, `import` and `backup`: a log leaves and comes back whole; copies are owner-only.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct DataCommandTests {
    @Test(arguments: Access.allCases) func exportThenImportRebuildsTheSameStore(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let export = await story.run(access, ["export"])
        #expect(export.status == 0, "\(export.errors)")
        let lines = export.output.split(separator: "\n")
        #expect(lines.count == 8)
        #expect(try JSONValue(parsing: String(try #require(lines.first)))["type"] == "set")
        let file = story.directory.sub("export.ndjson")
        try export.output.write(toFile: file, atomically: true, encoding: .utf8)

        let target = story.directory.sub("imported")
        let imported = await Tool.run(["import", file, "--data-dir", target, "--checkpoint-every", "3"])
        #expect(imported.output == "imported 8 actions into \(target) (3 checkpoint(s))\n", "\(imported.errors)")
        // The same history: same actions (seq, time, peer), same states, verified.
        #expect(await Tool.run(["export", "--data-dir", target]).output == export.output)
        #expect(await Tool.run(["get", "--data-dir", target]).output == (await story.run(access, ["get"])).output)
        #expect(await Tool.run(["verify", "--data-dir", target]).output == "verified 8 actions: 3 checkpoint(s) match\n")

        let again = await Tool.run(["import", file, "--data-dir", target])
        #expect(again.status == 2)
        #expect(again.errors.contains("already holds 8 actions"), "\(again.errors)")
        let partial = await story.run(access, ["export", "--from", "3", "--to", "4"])
        #expect(partial.output.split(separator: "\n").count == 2)
    }

    @Test func importRefusesBadInputAndLeavesNothingBehind() async throws {
        let directory = try TemporaryDirectory()
        let gap = directory.sub("gap.ndjson")
        try """
            {"seq":1,"type":"set","payload":{"path":"/n","value":1},"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}
            {"seq":3,"type":"set","payload":{"path":"/n","value":3},"time":"2026-11-21T10:00:01.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}
            """.write(toFile: gap, atomically: true, encoding: .utf8)
        let run = await Tool.run(["import", gap, "--data-dir", directory.sub("new")])
        #expect(run.status == 65)
        #expect(run.errors == "reel: line 2: seq 3 follows seq 1: the exported actions must be consecutive\n", "\(run.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.sub("new")))

        let garbage = directory.sub("garbage.ndjson")
        try "{not json\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let bad = await Tool.run(["import", garbage, "--data-dir", directory.sub("new")])
        #expect(bad.status == 65)
        #expect(bad.errors.contains("line 1 of \(garbage) is not valid JSON"), "\(bad.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.sub("new")))

        // Actions read prepared from their records: one the reducer refuses is named as before.
        for (payload, type, reason) in [
            (#"[{"op":"remove","path":"/missing"}]"#, "patch", "/missing"), (#"{"path":"/s","by":1}"#, "increment", "/s"),
        ] {
            let refusedAction = directory.sub("refused-\(type).ndjson")
            try """
                {"seq":1,"type":"set","payload":{"path":"/s","value":"text"},"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}
                {"seq":2,"type":"\(type)","payload":\(payload),"time":"2026-11-21T10:00:01.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}
                """.write(toFile: refusedAction, atomically: true, encoding: .utf8)
            let refusal = await Tool.run(["import", refusedAction, "--data-dir", directory.sub("new")])
            #expect(refusal.status == 65)
            #expect(refusal.errors.hasPrefix("reel: line 2: action 2 (\(type)) is refused by "), "\(refusal.errors)")
            #expect(refusal.errors.contains(reason), "\(refusal.errors)")
            #expect(!FileManager.default.fileExists(atPath: directory.sub("new")))
        }

        let aFile = directory.sub("a-file")
        #expect(FileManager.default.createFile(atPath: aFile, contents: Data("x".utf8)))
        let onAFile = await Tool.run(["import", gap, "--data-dir", aFile])
        #expect(onAFile.status == 2)
        #expect(onAFile.errors == "reel: cannot import into \(aFile): it exists and is not a directory\n", "\(onAFile.errors)")
        #expect(try String(contentsOfFile: aFile, encoding: .utf8) == "x")

        let occupied = directory.sub("occupied")
        try FileManager.default.createDirectory(atPath: occupied, withIntermediateDirectories: true)
        try "x".write(toFile: occupied + "/notes.txt", atomically: true, encoding: .utf8)
        let refused = await Tool.run(["import", gap, "--data-dir", occupied])
        #expect(refused.status == 2)
        #expect(refused.errors.contains("is not empty"))
        #expect(FileManager.default.fileExists(atPath: occupied + "/notes.txt"))
    }

    /// `import` reads an exported payload's text straight into the log's encoding, and a stock
    /// action into what the stock reducer applies: every stock type, payloads with members in any
    /// order, repeated keys, escapes and keys outside ASCII (which take the ordinary way) come
    /// back from `export` as the canonical form of what went in, and fold to the state the
    /// reducer makes of them in process.
    @Test func importFoldsEveryStockActionAsTheReducerDoes() async throws {
        let directory = try TemporaryDirectory()
        let values = [
            "1", "-0", "2.5e3", #""caf\u00e9 \ud83d\ude00""#, #"{ "z" : 1 , "a" : [true, null] }"#, #"{"é":1,"e\u0301":2}"#,
            #"{"k":1,"k":2}"#, "[]", "null",
        ]
        func payload(_ type: String, _ seq: Int) -> String {
            let key = "k\(seq % 7)"
            let value = values[seq % values.count]
            switch type {
            case "set": return seq % 2 == 0 ? #"{"path":"/m/\#(key)","value":\#(value)}"# : #"{ "value" : \#(value) , "path" : "/m/\#(key)" }"#
            case "increment": return seq % 3 == 0 ? #"{"path":"/n"}"# : #"{"by":\#(seq % 5),"path":"/n"}"#
            case "merge": return #"{"q":{"\#(key)":\#(value),"x":null}}"#
            case "append": return #"{"path":"/list","value":\#(value)}"#
            default:
                let operations = [
                    #"{"value":\#(value),"path":"/m/\#(key)","op":"add"}"#, #"{"op":"copy","from":"/n","path":"/copied"}"#,
                    #"{"op":"replace","path":"/m","value":{"r":\#(value)}}"#, #"{"path":"/m/r","op":"remove"}"#,
                ]
                return "[" + operations.prefix(seq % 2 == 0 ? 1 : 4).joined(separator: ",") + "]"
            }
        }
        func line(_ seq: Int, _ type: String, _ payload: String) -> String {
            #"{"seq":\#(seq),"type":"\#(type)","payload":\#(payload),"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}"#
        }
        var lines = [line(1, "set", #"{"path":"/m","value":{}}"#), line(2, "set", #"{"path":"/list","value":[]}"#), line(3, "set", #"{"path":"/n","value":0}"#)]
        let types = ["set", "increment", "merge", "append", "patch"]
        for seq in 4...6_000 {
            let type = types[(seq * 7 + seq / 5) % types.count]
            lines.append(line(seq, type, payload(type, seq)))
        }
        var state: JSONValue = [:]
        let reducer = JSONDocumentReducer()
        for line in lines {
            try reducer.reduce(into: &state, action: try ActionEnvelope(wire: try JSONValue(parsing: line)))
        }
        let file = directory.sub("mixed.ndjson")
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let target = directory.sub("imported")
        let imported = await Tool.run(["import", file, "--data-dir", target])
        #expect(imported.status == 0, "\(imported.errors)")
        let read = await Tool.run(["get", "--data-dir", target, "--json"])
        #expect(try JSONValue(parsing: Array(read.output.utf8))["value"] == state)
        let exported = await Tool.run(["export", "--data-dir", target]).output.split(separator: "\n").map(String.init)
        #expect(exported.count == lines.count)
        for (line, back) in zip(lines, exported) {
            let (sent, kept) = (try JSONValue(parsing: line), try JSONValue(parsing: back))
            if sent != kept {
                Issue.record("\(line) came back as \(back)")
                break
            }
        }
        #expect(await Tool.run(["verify", "--data-dir", target]).status == 0)
    }

    /// Lines are parsed on a thread of their own in batches of 4,096, ahead of the fold: many
    /// batches still go in order, and a bad line far into the file is named as before, with
    /// nothing left behind.
    @Test func importOfManyBatchesKeepsTheOrderAndNamesTheBadLine() async throws {
        let directory = try TemporaryDirectory()
        func line(_ seq: Int) -> String {
            #"{"seq":\#(seq),"type":"append","payload":{"path":"/seqs","value":\#(seq)},"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}"#
        }
        let good = directory.sub("good.ndjson")
        try (1...10_000).map(line).joined(separator: "\n").write(toFile: good, atomically: true, encoding: .utf8)
        let imported = await Tool.run(["import", good, "--data-dir", directory.sub("good")])
        #expect(imported.status == 0, "\(imported.errors)")
        let read = await Tool.run(["get", "/seqs", "--data-dir", directory.sub("good"), "--json"])
        let seqs = try JSONValue(parsing: Array(read.output.utf8))["value"]?.arrayValue?.compactMap(\.intValue)
        #expect(seqs == (1...10_000).map(Int64.init))

        for (name, lines, expected) in [
            ("garbage", (1...10_000).map { $0 == 9_000 ? "{not json" : line($0) }, "line 9000 of \(directory.sub("garbage.ndjson")) is not valid JSON"),
            ("gap", (1...10_000).filter { $0 != 5_000 }.map(line), "line 5000: seq 5001 follows seq 4999"),
        ] {
            let file = directory.sub("\(name).ndjson")
            try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let run = await Tool.run(["import", file, "--data-dir", directory.sub(name)])
            #expect(run.status == 65)
            #expect(run.errors.contains(expected), "\(run.errors)")
            #expect(!FileManager.default.fileExists(atPath: directory.sub(name)))
        }
    }

    /// An export of many pages (stretches read on every core at once) comes out whole and in seq
    /// order, offline and live, the whole log or a range across pages.
    @Test func anExportOfManyPagesComesOutWholeAndInOrder() async throws {
        let directory = try TemporaryDirectory()
        func line(_ seq: Int) -> String {
            let time = String(format: "2026-11-21T10:%02d:%02d.000000000Z", seq / 3_600 % 60, seq / 60 % 60)
            return seq % 2 == 0
                ? #"{"payload":{"path":"/k\#(seq % 7)","value":\#(seq)},"peer":{"gid":1,"pid":\#(seq),"uid":1},"seq":\#(seq),"time":"\#(time)","type":"set"}"#
                : #"{"payload":[{"op":"add","path":"/p\#(seq % 5)","value":"v\#(seq)"}],"peer":{"gid":2,"pid":3,"uid":4},"seq":\#(seq),"time":"\#(time)","type":"patch"}"#
        }
        let count = 25_000  // offline pages of 10,000, live pages of 256
        let lines = (1...count).map(line)
        let file = directory.sub("actions.ndjson")
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let data = directory.sub("data")
        let imported = await Tool.run(["import", file, "--data-dir", data])
        try #require(imported.status == 0, "\(imported.errors)")

        let offline = await Tool.run(["export", "--data-dir", data])
        #expect(offline.status == 0, "\(offline.errors)")
        #expect(offline.output == lines.joined(separator: "\n") + "\n", "the export is not the lines imported, in order")
        let range = await Tool.run(["export", "--from", "9990", "--to", "20011", "--data-dir", data])
        #expect(range.output == lines[9_989..<20_011].joined(separator: "\n") + "\n")

        let daemon = SpawnedDaemon(dataDirectory: data, socketPath: directory.sub("reel.sock"))
        try await daemon.start()
        let live = await Tool.run(["export", "--socket", daemon.socketPath])
        #expect(live.status == 0, "\(live.errors)")
        #expect(live.output == offline.output, "the live export differs from the offline one")
        let liveRange = await Tool.run(["export", "--from", "9990", "--to", "20011", "--socket", daemon.socketPath])
        #expect(liveRange.output == range.output)
        _ = try await daemon.stop()
    }

    /// The import is built aside (`TARGET/.reel-importing`) and moved into place whole: a refused
    /// or failed import leaves the target as it was — a history there is never touched — and one
    /// killed midway leaves only its staging directory, which the next import names.
    @Test func anImportAppearsOnlyWholeAndLeavesWhatItRefusesAsItWas() async throws {
        let directory = try TemporaryDirectory()
        let lines = (1...5).map {
            #"{"seq":\#($0),"type":"set","payload":{"path":"/n","value":\#($0)},"time":"2026-11-21T10:00:00.000000000Z","peer":{"uid":1,"gid":1,"pid":1}}"#
        }
        let file = directory.sub("five.ndjson")
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)

        // A history is refused, and stays whole.
        let target = directory.sub("target")
        #expect(await Tool.run(["import", file, "--data-dir", target]).status == 0)
        let before = await Tool.run(["export", "--data-dir", target])
        #expect(before.lines.count == 5)
        let again = await Tool.run(["import", file, "--data-dir", target])
        #expect(again.status == 2)
        #expect(again.errors.contains("already holds 5 actions"), "\(again.errors)")
        #expect(await Tool.run(["export", "--data-dir", target]).output == before.output)
        #expect(await Tool.run(["verify", "--data-dir", target]).status == 0)

        // An existing empty directory keeps its mode, and stays as it was when the import fails.
        let empty = directory.sub("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o750])
        let garbage = directory.sub("garbage.ndjson")
        try (lines + ["{not json"]).joined(separator: "\n").write(toFile: garbage, atomically: true, encoding: .utf8)
        #expect(await Tool.run(["import", garbage, "--data-dir", empty]).status == 65)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
        #expect(await Tool.run(["import", file, "--data-dir", empty]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).sorted() == ["data.mdb"])
        #expect((try FileManager.default.attributesOfItem(atPath: empty)[.posixPermissions] as? Int) == 0o750)
        #expect(await Tool.run(["export", "--data-dir", empty]).output == before.output)

        // Killed midway (its input a pipe kept open): the target holds only the staging directory.
        let fifo = directory.sub("input.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let cut = directory.sub("cut")
        let reel = try PackageExecutable.url("reel").path
        let process = try SpawnedProcess(reel, ["import", fifo, "--data-dir", cut])
        let writer = open(fifo, O_WRONLY)
        #expect(writer >= 0)
        defer { close(writer) }
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        #expect(text.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == text.count)
        try await waitUntil("the import's staging directory") { FileManager.default.fileExists(atPath: cut + "/.reel-importing/data.mdb") }
        #expect(try await process.stop(signal: SIGKILL) == 128 + SIGKILL)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cut) == [".reel-importing"])
        let named = await Tool.run(["import", file, "--data-dir", cut])
        #expect(named.status == 2)
        #expect(named.errors.contains("holds .reel-importing, left by an import that did not finish"), "\(named.errors)")
        try FileManager.default.removeItem(atPath: cut + "/.reel-importing")
        #expect(await Tool.run(["import", file, "--data-dir", cut]).status == 0)
        #expect(await Tool.run(["export", "--data-dir", cut]).output == before.output)
    }

    @Test(arguments: Access.allCases) func backupIsAConsistentOwnerOnlyCopy(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let destination = story.directory.sub("backup-\(access.rawValue)")
        let run = await story.run(access, ["backup", destination])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix("backup of seq 8 written to \(destination) ("), "\(run.output)")
        let json = await story.run(access, ["backup", destination + "-2", "--json"])
        let outcome = try #require(try json.jsonLines.first)
        #expect(outcome["seq"] == 8)
        #expect((outcome["bytes"]?.intValue ?? 0) > 0)

        let attributes = try FileManager.default.attributesOfItem(atPath: destination)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let file = try FileManager.default.attributesOfItem(atPath: destination + "/data.mdb")
        #expect((file[.posixPermissions] as? Int) == 0o600)
        #expect(await Tool.run(["get", "--data-dir", destination]).output == (await story.run(.live, ["get"])).output)
        #expect(await Tool.run(["verify", "--data-dir", destination]).status == 0)

        let again = await story.run(access, ["backup", destination])
        #expect(again.status == 2)
        #expect(again.errors.contains("is not empty"), "\(again.errors)")

        // An existing empty directory is taken and made owner-only; missing parents are made, as
        // `mkdir -p` makes them; a destination that cannot be made is refused in plain words.
        let empty = story.directory.sub("empty-\(access.rawValue)")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        #expect(await story.run(access, ["backup", empty]).status == 0)
        #expect((try FileManager.default.attributesOfItem(atPath: empty)[.posixPermissions] as? Int) == 0o700)
        let nested = story.directory.sub("new-parent-\(access.rawValue)/monday/backup")
        let made = await story.run(access, ["backup", nested])
        #expect(made.status == 0, "\(made.errors)")
        #expect(FileManager.default.fileExists(atPath: nested + "/data.mdb"))
        #expect(FileManager.default.createFile(atPath: story.directory.sub("a-file-\(access.rawValue)"), contents: Data()))
        let underAFile = story.directory.sub("a-file-\(access.rawValue)/backup")
        let refused = await story.run(access, ["backup", underAFile])
        #expect(refused.status == 2)
        #expect(refused.errors == "reel: cannot create \(underAFile): Not a directory\n", "\(refused.errors)")
    }
}
