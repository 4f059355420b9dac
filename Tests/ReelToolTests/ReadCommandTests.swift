import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `get`, `log`, `show`, `diff`, `replay`, `stats`, `checkpoints` through the real parser, live
/// against a real daemon and offline on its data directory while it runs; outputs checked.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct ReadCommandTests {
    @Test(arguments: Access.allCases) func getPrintsTheStateAndSlicesAtAnySeq(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let whole = await story.run(access, ["get"])
        #expect(whole.status == 0, "\(whole.errors)")
        #expect(whole.output == """
            {
              "character": {
                "hp": -4,
                "name": "Hero"
              }
            }

            """)
        let slice = await story.run(access, ["get", "/character/hp", "--at", "3", "--json"])
        #expect(try slice.jsonLines == [["seq": 3, "value": 6]])
        let initial = await story.run(access, ["get", "--at", "0", "--json"])
        #expect(try initial.jsonLines == [["seq": 0, "value": [:]]])
        let missing = await story.run(access, ["get", "/character/mp"])
        #expect(missing.status == 2)
        #expect(missing.errors.hasPrefix("reel: nothing at /character/mp"), "plain words, no protocol code: \(missing.errors)")
        let beyond = await story.run(access, ["get", "--at", "99"])
        #expect(beyond.status == 2)
        #expect(beyond.errors == "reel: seq 99 is beyond the latest seq 8\n", "\(beyond.errors)")
    }

    @Test(arguments: Access.allCases) func describeShowsEachActionTypeWithItsShapeAndExample(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let json = await story.run(access, ["describe", "--json"])
        #expect(json.status == 0, "\(json.errors)")
        let result = try #require(try json.jsonLines.first)
        #expect(result["reducer"] == ["name": "reel.json", "version": "1"])
        let actions = try #require(result["actions"]?.arrayValue)
        #expect(actions.map { $0["type"] } == ["append", "increment", "merge", "patch", "remove", "set", "@revert"])
        let set = try #require(actions.first { $0["type"] == "set" })
        #expect(set["version"] == 1)
        #expect(set["schema"]?["required"] == ["path", "value"])
        #expect(set["example"] == ["path": "/user/name", "value": "Grace"])
        let text = await story.run(access, ["describe"])
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output.hasPrefix("reducer reel.json@1\n"), "\(text.output)")
        #expect(text.output.contains("  payload: {path: JSON Pointer, value: any JSON}"), "\(text.output)")
        #expect(text.output.contains(#"  example: reel dispatch set '{"path":"/user/name","value":"Grace"}'"#), "\(text.output)")
        #expect(text.output.contains("  payload: {path: JSON Pointer, by?: number}"), "\(text.output)")
    }

    @Test(arguments: Access.allCases) func logListsActionsAsATableOrJSONLines(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let table = await story.run(access, ["log", "--from", "2", "--limit", "3"])
        #expect(table.status == 0, "\(table.errors)")
        #expect(table.lines.count == 4)
        let header = try #require(table.lines.first)
        #expect(header.split(separator: " ", omittingEmptySubsequences: true) == ["SEQ", "TIME", "TYPE", "PEER", "PAYLOAD"])
        // Columns line up: every TYPE cell starts where the header's does.
        let typeColumn = try #require(header.range(of: "TYPE")).lowerBound.utf16Offset(in: header)
        for (line, seq) in zip(table.lines.dropFirst(), 2...4) {
            #expect(line.hasPrefix("  \(seq)  20"), "\(line)")
            #expect(line.dropFirst(typeColumn).hasPrefix("increment"), "\(line)")
            #expect(line.hasSuffix(#"{"by":-2,"path":"/character/hp"}"#))
        }
        let json = await story.run(access, ["log", "--type", "set", "--json"])
        let actions = try json.jsonLines
        #expect(actions.count == 1)
        #expect(actions.first?["seq"] == 1)
        #expect(actions.first?["type"] == "set")
        #expect(actions.first?["peer"]?["uid"] == .int(Int64(getuid())))
        let all = await story.run(access, ["log", "--json"])
        #expect(try all.jsonLines.map { $0["seq"] } == (1...8).map { .int($0) })
        let fromZero = await story.run(access, ["log", "--from", "0", "--type", "increment", "--limit", "3", "--json"])
        #expect(try fromZero.jsonLines.map { $0["seq"] } == [2, 3, 4])
    }

    @Test(arguments: Access.allCases) func showPrintsOneActionAndItsChanges(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let human = await story.run(access, ["show", "6"])
        #expect(human.status == 0, "\(human.errors)")
        #expect(human.lines.count == 5)
        let head = try #require(human.lines.first)
        #expect(head.hasPrefix("seq 6  20"))
        #expect(head.contains("  increment  uid \(getuid()) pid "))
        // The story was dispatched from this process: the daemon read its executable.
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(Array(human.lines.dropFirst()) == [
            "exe: \(exe)",
            #"payload: {"by":-2,"path":"/character/hp"}"#,
            "changes:",
            "  ~ /character/hp  2 → 0",
        ])
        let json = try #require(try await story.run(access, ["show", "1", "--json"]).jsonLines.first)
        #expect(json["action"]?["type"] == "set")
        #expect(json["patch"] == [["op": "add", "path": "/character", "value": ["hp": 10, "name": "Hero"]]])
        let beyond = await story.run(access, ["show", "9"])
        #expect(beyond.status == 2)
        #expect(beyond.errors == "reel: seq 9 is beyond the latest seq 8\n", "\(beyond.errors)")
    }

    @Test(arguments: Access.allCases) func diffShowsWhatChangedBetweenTwoSeqs(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let human = await story.run(access, ["diff", "1", "8"])
        #expect(human.output == "~ /character/hp  10 → -4\n", "\(human.errors)")
        let fromStart = await story.run(access, ["diff", "0", "2", "/character", "--json"])
        #expect(try fromStart.jsonLines == [["patch": [["op": "add", "path": "/character", "value": ["hp": 8, "name": "Hero"]]]]])
        let none = await story.run(access, ["diff", "3", "3"])
        #expect(none.output == "no change between seq 3 and seq 3\n")
    }

    @Test(arguments: Access.allCases) func replayShowsTheStateWithoutSomeActions(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let value = await story.run(access, ["replay", "--skip", "2,3", "/character/hp"])
        #expect(value.output == "0\n", "\(value.errors)")
        let earlier = await story.run(access, ["replay", "--skip", "8", "--to", "8", "/character/hp", "--json"])
        #expect(try earlier.jsonLines == [["value": -2, "refused": []]])
        let diff = await story.run(access, ["replay", "--skip", "2", "--diff"])
        #expect(diff.output == "without seq 2, the state at seq 8 would differ:\n~ /character/hp  -4 → -2\n", "\(diff.errors)")
        let bad = await story.run(access, ["replay", "--skip", "two"])
        #expect(bad.status == 64)
        #expect(bad.errors.contains("--skip takes seqs"), "\(bad.errors)")
    }

    @Test(arguments: Access.allCases) func statsAndCheckpointsPrintTables(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        let stats = await story.run(access, ["stats"])
        #expect(stats.status == 0, "\(stats.errors)")
        #expect(stats.lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["FIGURE", "VALUE"])
        #expect(stats.lines.contains { $0.hasPrefix("seq ") && $0.hasSuffix(" 8") }, "\(stats.output)")
        let json = try #require(try await story.run(access, ["stats", "--json"]).jsonLines.first)
        #expect(json["seq"] == 8)
        let checkpoints = await story.run(access, ["checkpoints", "--json"])
        let list = try checkpoints.jsonLines
        #expect(list.map { $0["seq"] } == [5])
        #expect(list.first?["reducer"] == ["name": "reel.json", "version": "1"])
        #expect(list.first?["hash"]?.stringValue?.count == 64)
    }

    @Test func colorOnlyOnATerminalAndNeverWithNoColor() async throws {
        let story = try await StoryDaemon.started()
        let colored = await Tool.run(story.live + ["diff", "1", "8"], terminal: true)
        #expect(colored.output.contains("\u{1B}["), "\(colored.output)")
        let noColor = await Tool.run(story.live + ["diff", "1", "8"], terminal: true, environment: ["NO_COLOR": "1"])
        #expect(noColor.output == "~ /character/hp  10 → -4\n")
        let forced = await Tool.run(story.live + ["diff", "1", "8", "--color", "always"], terminal: false)
        #expect(forced.output.contains("\u{1B}["))
        let never = await Tool.run(story.live + ["diff", "1", "8", "--color", "never"], terminal: true)
        #expect(!never.output.contains("\u{1B}["))
    }

    @Test func optionsBeforeTheCommandWorkToo() async throws {
        let story = try await StoryDaemon.started()
        let run = await Tool.run(["--socket", story.daemon.socketPath, "--json", "get", "/character/hp"])
        #expect(try run.jsonLines == [["seq": 8, "value": -4]])
        let both = await Tool.run(["get", "--socket", "x", "--data-dir", "y"])
        #expect(both.status == 64)
        #expect(both.errors.contains("exclude each other"))
    }

    @Test func noDaemonIsAClearErrorWithItsOwnStatus() async throws {
        let directory = try TemporaryDirectory()
        let run = await Tool.run(["get", "--socket", directory.sub("nothing.sock")])
        #expect(run.status == 69)
        #expect(
            run.errors == "reel: cannot reach a daemon at \(directory.sub("nothing.sock")): there is no socket there (is reeld running?). "
                + "Start one (reeld), point at it with --socket or REEL_SOCKET, or work offline with --data-dir\n",
            "one line, the path once, no SwiftNIO call names: \(run.errors)"
        )
        let offline = await Tool.run(["get", "--data-dir", directory.sub("nothing")])
        #expect(offline.status == 69)
        #expect(offline.errors == "reel: no such directory: \(directory.sub("nothing"))\n", "\(offline.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.sub("nothing")))
    }

    /// A directory that exists but is not Reel's is told from one that does not exist.
    @Test func aDirectoryThatIsNotReelsIsNamedSo() async throws {
        let directory = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.sub("notes.txt"), contents: Data("x".utf8)))
        let foreign = await Tool.run(["get", "--data-dir", directory.path])
        #expect(foreign.status == 69)
        #expect(foreign.errors == "reel: \(directory.path) is not a Reel data directory: it has no data.mdb\n", "\(foreign.errors)")
        try FileManager.default.createDirectory(atPath: directory.sub("empty"), withIntermediateDirectories: false)
        let empty = await Tool.run(["log", "--data-dir", directory.sub("empty")])
        #expect(empty.status == 69)
        #expect(empty.errors.hasPrefix("reel: \(directory.sub("empty")) is not a Reel data directory: it is empty"), "\(empty.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.sub("empty")).isEmpty, "reading wrote nothing")
    }

    /// `reel ui --port` on a port another program holds: the port is named, and what to do.
    @Test func aBusyPortForThePageIsNamed() async throws {
        let story = try await StoryDaemon.started()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let run = await Tool.run(story.offline + ["ui", "--port", String(port), "--no-browser"])
        #expect(run.status == 69)
        #expect(
            run.errors == "reel: cannot serve the page: 127.0.0.1:\(port) is in use by another program: choose another with --port, or leave --port out for a free one\n",
            "\(run.errors)"
        )
    }

    /// Socket failures in words: a path too long for a Unix socket, a socket nobody listens on.
    @Test func socketFailuresSayWhatToDo() async throws {
        let directory = try TemporaryDirectory()
        let long = directory.sub(String(repeating: "s", count: 120) + ".sock")
        let tooLong = await Tool.run(["get", "--socket", long])
        #expect(tooLong.status == 69)
        #expect(tooLong.errors.contains("longer than a Unix socket path may be (107): use a shorter one"), "\(tooLong.errors)")
        #expect(!tooLong.errors.contains("unixDomainSocketPathTooLong"), "\(tooLong.errors)")
        // A socket file left behind, with nobody listening.
        let stale = directory.sub("stale.sock")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in stale.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        let refused = await Tool.run(["get", "--socket", stale])
        #expect(refused.status == 69)
        #expect(refused.errors.contains("at \(stale): nothing is listening there"), "\(refused.errors)")
    }
}
