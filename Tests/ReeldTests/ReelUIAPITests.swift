import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `reel ui`'s server, live against a real daemon and offline on its data directory: the token,
/// and every API answer checked against what the `reel` command for the same question prints.
/// (ReelUIBrowserTests drives the page itself in Chromium.)
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct ReelUIAPITests {
    /// A running `reel ui` and the URL it printed.
    struct Page {
        let program: RunningProgram
        let port: Int
        let token: String

        static func start(_ arguments: [String]) async throws -> Page {
            let program = try RunningProgram("reel", ["ui", "--no-browser"] + arguments)
            try await program.waitForLines(1)
            let url = try #require(program.printed.split(separator: "\n").first.map(String.init), "reel ui printed nothing")
            let pattern = #/^http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64})$/#
            let match = try #require(try pattern.wholeMatch(in: url), "not the page's URL: \(url)")
            return Page(program: program, port: Int(match.1)!, token: String(match.2))
        }

        func get(_ path: String, token: Bool = true) throws -> HTTPGet.Response {
            try HTTPGet.request(.tcp(port: port), path: path, headers: token ? ["Authorization": "Bearer \(self.token)"] : [:])
        }

        func json(_ path: String) throws -> JSONValue {
            let response = try get(path)
            #expect(response.status == 200, "\(path): \(response.status) \(response.body)")
            return try JSONValue(parsing: response.body)
        }

        func post(_ path: String, _ body: JSONValue) throws -> (status: Int, json: JSONValue) {
            let response = try HTTPGet.request(
                .tcp(port: port), path: path, method: "POST", headers: ["Authorization": "Bearer \(token)"], body: body.jsonString
            )
            return (response.status, try JSONValue(parsing: response.body))
        }

        func stop() async throws {
            program.signal(SIGINT)
            let result = try await program.finish()
            #expect(result.status == 0, "reel ui ended with \(result.status): \(result.errors)")
        }
    }

    static func reelJSON(_ arguments: [String]) async throws -> JSONValue {
        let result = try await runProgram("reel", arguments + ["--json"])
        #expect(result.status == 0 || result.status == 1, "\(arguments): \(result.errors)")
        return try JSONValue(parsing: result.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func liveAndOfflineTheAPIAnswersAsReelDoes() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let socket = ["--socket", daemon.socketPath]
        for (type, payload) in [
            ("set", #"{"path":"/character","value":{"hp":10,"name":"Ada"}}"#), ("increment", #"{"path":"/character/hp","by":-4}"#),
            ("set", #"{"path":"/items","value":["sword"]}"#), ("increment", #"{"path":"/character/hp","by":-9}"#),
        ] {
            #expect(try await runProgram("reel", ["dispatch", type, payload] + socket).status == 0)
        }
        let page = try await Page.start(socket)

        // The token: nothing without it, the cookie once the page is loaded with it.
        #expect(try page.get("/api/info", token: false).status == 401)
        #expect(try page.get("/", token: false).status == 401)
        #expect(try page.get("/api/state?token=\(String(repeating: "0", count: 64))", token: false).status == 401)
        let index = try page.get("/?token=\(page.token)", token: false)
        #expect(index.status == 200 && index.body.contains("main.js"))
        let cookie = try #require(index.headers["set-cookie"])
        #expect(cookie.contains("reel_ui_token=\(page.token)") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let script = try HTTPGet.request(.tcp(port: page.port), path: "/main.js", headers: ["Cookie": "reel_ui_token=\(page.token)"])
        #expect(script.status == 200 && script.headers["content-type"]?.hasPrefix("text/javascript") == true)

        // The WebSocket too: its upgrade needs the token like any request. (Refused, the answer is
        // hummingbird-websocket's to any upgrade it does not make: 400, with nothing else.)
        let upgrade = ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="]
        let refusedUpgrade = try HTTPGet.request(.tcp(port: page.port), path: "/api/live", headers: upgrade, readHeadOnly: true)
        #expect(refusedUpgrade.status == 400 && refusedUpgrade.body.isEmpty, "upgrade without the token: \(refusedUpgrade.status)")
        #expect(try HTTPGet.request(.tcp(port: page.port), path: "/api/live?token=\(page.token)", headers: upgrade, readHeadOnly: true).status == 101)

        let info = try page.json("/api/info")
        #expect(info["live"] == true && info["seq"] == 4 && info["reducer"] == "reel.json@1" && info["canDispatch"] == true)

        // What each action type takes, for the dispatch form: as `reel describe` says.
        let describedCall = try page.post("/api/call/describe", [:])
        #expect(describedCall.status == 200)
        let described = describedCall.json
        #expect(described == (try await Self.reelJSON(["describe"] + socket)))
        // Any read method by name, with the protocol's own errors; nothing that writes.
        #expect(try page.post("/api/call/get", ["path": "/character/hp", "at": 2]).json == ["seq": 2, "value": 6])
        #expect(try page.post("/api/call/get", ["at": 99]).status == 404)
        #expect(try page.post("/api/call/get", ["at": "two"]).status == 400)
        #expect(try page.post("/api/call/dispatch", ["action": ["type": "set"]]).status == 404)
        #expect(try page.post("/api/call/nosuch", [:]).status == 404)
        #expect(described["actions"]?.arrayValue?.map { $0["type"] } == ["append", "increment", "merge", "patch", "remove", "set", "@revert"])

        // State at a seq, what an action changed, a diff, what-if, bisect: as the commands say.
        let state = try page.json("/api/state?at=2")
        #expect(state["value"] == (try await Self.reelJSON(["get", "--at", "2"] + socket))["value"])
        #expect(try page.json("/api/state?at=2&path=/character/hp")["value"] == 6)
        #expect(try page.get("/api/state?path=/nothing").status == 404)
        let shown = try page.json("/api/show?seq=4")
        let show = try await Self.reelJSON(["show", "4"] + socket)
        #expect(shown["patch"] == show["patch"] && shown["action"]?["type"] == "increment", "\(shown) vs \(show)")
        // What each change overwrote, for old → new as `reel show` prints it (6 → -3).
        #expect(shown["old"] == [["value": 6]], "\(shown)")
        let diff = try page.json("/api/diff?from=1&to=4")
        #expect(diff["patch"] == (try await Self.reelJSON(["diff", "1", "4"] + socket))["patch"])
        // Per operation: hp was 10 at seq 1; /items is new (nothing overwritten).
        let diffOld = zip(diff["patch"]?.arrayValue ?? [], diff["old"]?.arrayValue ?? []).map { ($0["path"], $1) }
        #expect(diffOld.count == 2 && diffOld.allSatisfy { $0.0 == "/character/hp" ? $0.1 == ["value": 10] : $0.1 == .null }, "\(diff)")
        let whatIf = try page.post("/api/whatif", ["skip": [2]])
        #expect(whatIf.status == 200)
        #expect(whatIf.json["value"] == (try await Self.reelJSON(["replay", "--skip", "2"] + socket))["value"])
        #expect(whatIf.json["patch"] == [["op": "replace", "path": "/character/hp", "value": 1]])
        #expect(whatIf.json["old"] == [["value": -3]])
        let bisect = try page.post("/api/bisect", ["condition": "/character/hp < 0"])
        #expect(bisect.json["seq"] == (try await Self.reelJSON(["bisect", "/character/hp < 0"] + socket))["seq"])
        #expect(bisect.json["seq"] == 4)
        #expect(try page.post("/api/bisect", ["condition": "/character/hp <"]).status == 400)

        // The log: pages, search, rows by seq, export.
        let history = try page.json("/api/history?from=2&limit=2")
        #expect(history["actions"]?.arrayValue?.map { $0["seq"] } == [2, 3] && history["latest"] == 4)
        #expect(try page.json("/api/search?type=increment")["seqs"] == [2, 4])
        #expect(try page.json("/api/search?text=sword")["seqs"] == [3])
        #expect(try page.json("/api/actions?seqs=4,1")["actions"]?.arrayValue?.map { $0["seq"] } == [4, 1])
        // The log by a node (the store's change index): as `reel log --changed`, paged, newest
        // first, with types; `reel blame` through the generic call.
        let changedLog = try await runProgram("reel", ["log", "--changed", "/character/hp", "--json"] + socket).output
        let changedSeqs = try changedLog.split(separator: "\n").map { try JSONValue(parsing: String($0))["seq"] }
        #expect(changedSeqs == [1, 2, 4], "\(changedLog)")
        #expect(try page.json("/api/search?changed=/character/hp")["seqs"] == .array(changedSeqs.compactMap { $0 }))
        #expect(try page.json("/api/search?changed=/character/hp&type=set")["seqs"] == [1])
        #expect(try page.json("/api/search?changed=/items&text=sword")["seqs"] == [3])
        var paged: [JSONValue?] = []
        var from: JSONValue? = 1
        while let start = from {
            let answer = try page.json("/api/history?changed=/character/hp&limit=2&from=\(start.jsonString)")
            paged += answer["actions"]?.arrayValue?.map { $0["seq"] } ?? []
            from = answer["next"]
        }
        #expect(paged == changedSeqs)
        let newest = try page.json("/api/history?changed=/character/hp&order=desc&limit=2")
        #expect(newest["actions"]?.arrayValue?.map { $0["seq"] } == [4, 2] && newest["next"] != nil, "\(newest)")
        #expect(try page.json("/api/history?changed=/character/hp&type=increment")["actions"]?.arrayValue?.map { $0["seq"] } == [2, 4])
        #expect(try page.get("/api/history?changed=character").status == 400)
        #expect(try page.get("/api/history?order=sideways").status == 400)
        let blame = try page.post("/api/call/blame", ["path": "/character", "at": 3])
        let blamed = try await runProgram("reel", ["blame", "/character", "--at", "3", "--json"] + socket).output
        let blamedEntries = try blamed.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
        #expect(blame.status == 200 && blame.json["seq"] == 3, "\(blame)")
        #expect(blame.json["entries"]?.arrayValue?.map { [$0["path"], $0["seq"]] } == blamedEntries.map { [$0["path"], $0["seq"]] })
        #expect(blamedEntries.map { $0["seq"] } == [2, 1], "\(blamed)")
        let exported = try page.get("/api/export?from=2&to=3")
        #expect(exported.headers["content-disposition"]?.contains("reel-2-3.ndjson") == true)
        #expect(exported.body == (try await runProgram("reel", ["export", "--from", "2", "--to", "3"] + socket)).output)

        // Live: a dispatch and a revert from the page, as a user would.
        let dispatched = try page.post("/api/dispatch", ["type": "set", "payload": ["path": "/gold", "value": 5]])
        #expect(dispatched.status == 200 && dispatched.json["seq"] == 5)
        let reverted = try page.post("/api/revert", ["to": 3])
        #expect(reverted.json["seq"] == 6)
        #expect((try await Self.reelJSON(["get", "/character/hp"] + socket))["value"] == 6)
        #expect(try page.post("/api/dispatch", ["type": "nope", "payload": [:]]).json["error"]?["code"] == 1002)
        // Ctrl-C ends it promptly even with a connection open on which nothing was sent, as
        // browsers keep (it held reel ui forever before ShutdownDeadline).
        let idle = try RawSocket.connect(.tcp(port: page.port))
        defer { close(idle) }
        let stopping = ContinuousClock.now
        try await page.stop()
        // Its 1 s grace, not forever (`finish` would give up at 20 s); the margin is for a busy
        // machine.
        #expect(ContinuousClock.now - stopping < .seconds(15), "reel ui took long to stop after Ctrl-C")
        #expect(try await daemon.stop() == 0)

        // Offline on the same data: the same answers, and no dispatch.
        let offline = try await Page.start(["--data-dir", dir.sub("data")])
        let offlineInfo = try offline.json("/api/info")
        #expect(offlineInfo["live"] == false && offlineInfo["seq"] == 6 && offlineInfo["canDispatch"] == false)
        #expect(try offline.json("/api/state?at=2")["value"] == state["value"])
        let offlineShown = try offline.json("/api/show?seq=4")
        #expect(offlineShown["patch"] == shown["patch"] && offlineShown["old"] == shown["old"])
        #expect(try offline.post("/api/call/describe", [:]).json == described)
        let refused = try offline.post("/api/dispatch", ["type": "set", "payload": ["path": "/x", "value": 1]])
        #expect(refused.status == 403)
        try await offline.stop()
    }

    /// `reel ui --bundle`: the page's history starts at the bundle's first state (`origin` in
    /// /api/info, where the slider and the log begin), and seqs before it are refused.
    @Test func aBundleStartsThePageAtItsOrigin() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        for n in 1...5 {
            #expect(try await runProgram("reel", ["dispatch", "set", #"{"path":"/n","value":\#(n)}"#, "--socket", daemon.socketPath]).status == 0)
        }
        let file = dir.sub("slice.bundle")
        let written = try await runProgram("reel", ["bundle", "--from", "3", "--to", "5", "-o", file, "--socket", daemon.socketPath])
        #expect(written.status == 0, "\(written.errors)")
        let page = try await Page.start(["--bundle", file])
        let info = try page.json("/api/info")
        #expect(info["origin"] == 2, "\(info)")
        #expect(info["seq"] == 5)
        #expect(info["live"] == false)
        let history = try page.json("/api/history?from=1&limit=10")
        #expect(history["actions"]?.arrayValue?.map { $0["seq"] } == [3, 4, 5], "\(history)")
        #expect(try page.json("/api/state?at=2")["value"] == ["n": 2])
        #expect(try page.get("/api/state?at=1").status != 200)
        try await page.stop()
        _ = try await daemon.stop()
    }
}
