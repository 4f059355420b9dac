import Foundation
import ReelCore
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelStore
import ReelTestSupport
import Testing

/// Provenance through the real `reeld` and `reel`: the meta a client gives and the executable the
/// daemon reads for each connection are logged, shown, and found by correlation id, live and
/// offline alike.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ProvenanceTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// The path `/proc/<pid>/exe` names, with every symlink resolved, as the kernel gives it.
    static func executable(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else { throw SpawnError("cannot resolve \(path)") }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func dispatch(_ path: String, meta: JSONValue? = nil, type: String = "set") -> JSONValue {
        var params = Params.dispatch(type, type == "set" ? ["path": .string(path), "value": 1] : ["path": .string(path)])
        if let meta, case .object(var members) = params {
            members["meta"] = meta
            params = .object(members)
        }
        return params
    }

    static func seqs(_ response: JSONValue) -> [Int64] {
        (response["result"]?["actions"]?.arrayValue ?? []).compactMap { $0["seq"]?.intValue }
    }

    @Test func metaAndExeAreLoggedAndFoundLiveAndOffline() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let socket = ["--socket", daemon.socketPath]
        let ownExe = try Self.executable("/proc/self/exe")
        let reelExe = try Self.executable(PackageExecutable.url("reel").path)
        let order17: JSONValue = ["correlationId": "order-17"]
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let dispatches: [JSONValue] = [
                Self.dispatch("/a", meta: [
                    "traceparent": .string(Self.traceparent), "correlationId": "order-17", "causationId": "req-9", "source": "checkout",
                ]),
                Self.dispatch("/b"),
                Self.dispatch("/a", meta: ["correlationId": "order-17", "causationId": "1"], type: "increment"),
                Self.dispatch("/c", meta: ["correlationId": "order-18"]),
                ["actions": [["type": "set", "payload": ["path": "/d", "value": 1]], ["type": "increment", "payload": ["path": "/a"]]],
                 "meta": order17],
            ]
            for (index, params) in dispatches.enumerated() {
                let answer = try await connection.request(index + 1, "dispatch", params)
                #expect(answer["error"] == nil, "\(answer)")
            }
            // A bad meta is refused whole: nothing is logged.
            let refused = try await connection.request(12, "dispatch", Self.dispatch("/x", meta: ["traceparent": "not-a-trace"]))
            #expect(refused["error"]?["code"] == .int(Int64(RPCError.Code.invalidParams)))
            #expect(refused["error"]?["message"]?.stringValue?.hasPrefix("params.meta.traceparent must be a W3C traceparent") == true)
            let tooLong = try await connection.request(
                13, "dispatch", Self.dispatch("/x", meta: ["source": .string(String(repeating: "s", count: 257))])
            )
            #expect(tooLong["error"]?["message"] == "params.meta.source is 257 bytes long; the limit is 256")
            #expect(try await connection.request(14, "hello")["result"]?["seq"] == 6)
        }

        // `reel dispatch` sends meta; the daemon reads `reel`'s own executable.
        let sent = try await runProgram(
            "reel", ["dispatch", "set", #"{"path":"/e","value":1}"#, "--correlation-id", "order-17", "--causation-id", "6", "--source", "cli",
                     "--traceparent", Self.traceparent] + socket
        )
        #expect(sent.status == 0, "\(sent.errors)")
        #expect(sent.output == "seq 7\n")
        let badTrace = try await runProgram("reel", ["dispatch", "reset", "--traceparent", "00-x"] + socket)
        #expect(badTrace.status == 64)
        #expect(badTrace.errors.contains("--traceparent must be a W3C traceparent"), "\(badTrace.errors)")

        // Each history asked, with its live answer, asked again offline below.
        var asked: [(params: JSONValue, live: JSONValue)] = []
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let all = try #require(try await connection.request(1, "history")["result"]?["actions"]?.arrayValue)
            try #require(all.count == 7)
            let first = all[0]
            #expect(first["meta"] == [
                "causationId": "req-9", "correlationId": "order-17", "source": "checkout", "traceparent": .string(Self.traceparent),
            ])
            #expect(first["peer"]?["exe"] == .string(ownExe), "the daemon read another executable than this process's")
            #expect(first["peer"]?["pid"] == .int(Int64(getpid())))
            #expect(all[1]["meta"] == nil, "no meta given, none shown")
            #expect(all[5]["meta"] == order17, "each action of a batch carries its meta")
            #expect(all[6]["peer"]?["exe"] == .string(reelExe))

            for params: JSONValue in [
                [:],
                ["correlationId": "order-17"],
                ["correlationId": "order-17", "types": ["increment"]],
                ["correlationId": "order-17", "order": "desc", "limit": 2],
                ["correlationId": "order-17", "order": "desc", "to": 4],
                ["correlationId": "order-17", "from": 2, "limit": 1],
                ["correlationId": "order-17", "types": ["set"], "order": "desc"],
                ["correlationId": "nobody"],
            ] {
                asked.append((params, try await connection.request(2, "history", params)))
            }
        }
        #expect(Self.seqs(asked[1].live) == [1, 3, 5, 6, 7])
        #expect(Self.seqs(asked[2].live) == [3, 6])
        #expect(Self.seqs(asked[3].live) == [7, 6])
        #expect(asked[3].live["result"]?["next"] == 5, "desc: next is the to of the following page")
        #expect(Self.seqs(asked[4].live) == [3, 1])
        #expect(Self.seqs(asked[5].live) == [3])
        #expect(asked[5].live["result"]?["next"] == 5)
        #expect(Self.seqs(asked[6].live) == [7, 5, 1])
        #expect(Self.seqs(asked[7].live) == [])

        // `reel log --correlation` and `reel show`, live.
        let logged = try await runProgram("reel", ["log", "--correlation", "order-17", "--json"] + socket)
        #expect(logged.status == 0, "\(logged.errors)")
        let lines = try logged.output.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        #expect(lines.map { $0["seq"]?.intValue } == [1, 3, 5, 6, 7])
        #expect(lines.last?["peer"]?["exe"] == .string(reelExe))
        #expect(lines.last?["meta"] == [
            "causationId": "6", "correlationId": "order-17", "source": "cli", "traceparent": .string(Self.traceparent),
        ])
        let filtered = try await runProgram("reel", ["log", "--correlation", "order-17", "--type", "set", "--last", "2"] + socket)
        #expect(filtered.output.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first } == ["5", "7"], "\(filtered.output)")
        let table = try await runProgram("reel", ["log", "--correlation", "order-17", "--from", "7"] + socket)
        // The table keeps its columns: SEQ TIME TYPE PEER PAYLOAD, without meta or exe.
        let row = try #require(table.output.split(separator: "\n").last).split(separator: " ").map(String.init)
        #expect(row.count == 8, "\(table.output)")
        #expect(row.first == "7" && row.dropFirst(2).prefix(4) == ["set", "uid", "\(getuid())", "pid"], "\(table.output)")
        #expect(row.last == #"{"path":"/e","value":1}"#, "\(table.output)")
        let none = try await runProgram("reel", ["log", "--correlation", "nobody"] + socket)
        #expect(none.status == 0)
        #expect(none.output.isEmpty)
        #expect(none.errors.contains("no action with correlation id 'nobody' in seqs 1…7"), "\(none.errors)")
        let shown = try await runProgram("reel", ["show", "7"] + socket)
        #expect(shown.output.split(separator: "\n").dropFirst().prefix(5).map(String.init) == [
            "exe: \(reelExe)", "causation: 6", "correlation: order-17", "source: cli", "trace: \(Self.traceparent)",
        ], "\(shown.output)")
        let plain = try await runProgram("reel", ["show", "2"] + socket)
        #expect(plain.output.split(separator: "\n").dropFirst().first == Substring("exe: \(ownExe)"), "\(plain.output)")
        #expect(!plain.output.contains("correlation:"))

        #expect(try await daemon.stop() == 0)

        // Offline, on the data directory the daemon left: the same answers.
        let data = try DataDirectory(path: dir.sub("data"), reducerName: nil, options: .init(readOnly: true))
        let timeline = Timeline(directory: data, definition: .stock)
        for (params, live) in asked {
            let read = try HistoryParams(params: params)
            let page = try timeline.history(
                from: read.from, to: read.to, limit: read.limit, types: read.types, correlationId: read.correlationId,
                newestFirst: read.newestFirst
            )
            #expect(HistoryPage(actions: page.actions, next: page.next).asJSON == live["result"], "\(params)")
        }
        let offline = ["--data-dir", dir.sub("data")]
        let offlineLog = try await runProgram("reel", ["log", "--correlation", "order-17", "--json"] + offline)
        #expect(offlineLog.output == logged.output, "\(offlineLog.errors)")
        let offlineFiltered = try await runProgram("reel", ["log", "--correlation", "order-17", "--type", "set", "--last", "2"] + offline)
        #expect(offlineFiltered.output == filtered.output)
        let offlineShow = try await runProgram("reel", ["show", "7"] + offline)
        #expect(offlineShow.output == shown.output, "\(offlineShow.errors)")

        // Export and import carry meta and exe both ways: the imported log reads as the original.
        let exported = try await runProgram("reel", ["export"] + offline)
        #expect(exported.status == 0, "\(exported.errors)")
        #expect(exported.output.contains(#""meta":{"causationId":"6","correlationId":"order-17","source":"cli""#))
        #expect(exported.output.contains(#""exe":"\#(reelExe)""#))
        let imported = try await runProgram("reel", ["import", "-", "--data-dir", dir.sub("imported")], input: exported.output)
        #expect(imported.status == 0, "\(imported.errors)")
        let original = try await runProgram("reel", ["log", "--json"] + offline)
        let copy = try await runProgram("reel", ["log", "--json", "--data-dir", dir.sub("imported")])
        #expect(copy.output == original.output)
        #expect(copy.output == exported.output)
        let copiedLog = try await runProgram("reel", ["log", "--correlation", "order-17", "--json", "--data-dir", dir.sub("imported")])
        #expect(copiedLog.output == logged.output)
    }
}
