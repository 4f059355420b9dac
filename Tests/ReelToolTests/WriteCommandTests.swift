import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// `dispatch`, `revert`, `watch` and `log --follow` against a real daemon; their offline refusals.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy(long: true)) struct WriteCommandTests {
    @Test func dispatchPrintsTheSeqOnceDurable() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let first = await Tool.run(story.live + ["dispatch", "set", #"{"path":"/n","value":1}"#])
        #expect(first.output == "seq 1\n", "\(first.errors)")
        let json = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/n"}"#, "--json"])
        #expect(try json.jsonLines == [["seq": 2]])
        let state = await Tool.run(story.offline + ["get", "/n"])
        #expect(state.output == "2\n")
    }

    @Test func dispatchRefusalsCarryTheDaemonsCodeAndMessage() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let stale = await Tool.run(story.live + ["dispatch", "set", #"{"path":"/n","value":1}"#, "--expected-seq", "5"])
        #expect(stale.status == 2)
        #expect(stale.errors.hasPrefix("reel: expectedSeq is 5 but the latest seq is 0"), "\(stale.errors)")
        let unknown = await Tool.run(story.live + ["dispatch", "frobnicate"])
        #expect(unknown.status == 2)
        #expect(unknown.errors.hasPrefix("reel: unknown action type 'frobnicate' (known: append, increment"), "\(unknown.errors)")
        let rejected = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/missing/n"}"#])
        #expect(rejected.status == 2)
        #expect(rejected.errors.hasPrefix("reel: increment: "), "\(rejected.errors)")
        let badJSON = await Tool.run(story.live + ["dispatch", "set", #"{"path":"#])
        #expect(badJSON.status == 65)
        #expect(badJSON.errors.contains("the payload is not valid JSON"), "\(badJSON.errors)")
        let log = await Tool.run(story.live + ["log", "--json"])
        #expect(log.output.isEmpty, "refused dispatches logged nothing")
    }

    /// The stock types' traps: a payload that cannot be what the type means is refused with the
    /// right shape, and the state is as it was.
    @Test func aPayloadOfTheWrongShapeIsRefusedAndChangesNothing() async throws {
        let story = try await StoryDaemon.started(seed: false)
        _ = await Tool.run(story.live + ["dispatch", "set", #"{"path":"/user","value":{"theme":"light"}}"#])
        let noPayload = await Tool.run(story.live + ["dispatch", "merge"])
        #expect(noPayload.status == 2)
        #expect(noPayload.errors.hasPrefix("reel: merge takes an object"), "\(noPayload.errors)")
        #expect(noPayload.errors.contains(#"use set with the path """#), "\(noPayload.errors)")
        let text = await Tool.run(story.live + ["dispatch", "merge", #""oops""#])
        #expect(text.status == 2)
        let guessed = await Tool.run(story.live + ["dispatch", "merge", #"{"path":"/user","value":{"theme":"dark"}}"#])
        #expect(guessed.status == 2)
        #expect(guessed.errors.contains("not {path, value}"), "\(guessed.errors)")
        let misnamed = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/n","value":5}"#])
        #expect(misnamed.status == 2)
        #expect(misnamed.errors.hasPrefix("reel: increment does not take 'value'; its payload is {path, by}"), "\(misnamed.errors)")
        #expect(await Tool.run(story.live + ["get", "--json"]).output == #"{"seq":1,"value":{"user":{"theme":"light"}}}"# + "\n")
        // The explicit forms do what they say.
        #expect(await Tool.run(story.live + ["dispatch", "merge", #"{"user":{"theme":"dark"}}"#]).status == 0)
        #expect(await Tool.run(story.live + ["dispatch", "set", #"{"path":"","value":"the whole state"}"#]).status == 0)
        #expect(await Tool.run(story.live + ["get"]).output == "\"the whole state\"\n")
    }

    /// A request over the daemon's line limit is the daemon's refusal, not a lost connection: the
    /// limit and the setting are named, nothing was carried out, and the exit status is 65.
    @Test func aPayloadOverTheLimitIsRefusedNotLost() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let input = #"{"path":"/big","value":""# + String(repeating: "x", count: 1_100_000) + #""}"#
        let run = try await runProgram("reel", ["dispatch", "set", "-", "--socket", story.daemon.socketPath], input: input)
        #expect(run.status == 65)
        #expect(run.errors.contains("over the daemon's limit of 1048576 bytes per request line; nothing was carried out"), "\(run.errors)")
        #expect(run.errors.contains("--max-line-bytes"), "\(run.errors)")
        #expect(!run.errors.contains("may or may not"), "\(run.errors)")
        #expect(await Tool.run(story.live + ["log", "--json"]).output.isEmpty)
    }

    @Test func anIdempotencyKeyMakesARetryHarmless() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let arguments = story.live + ["dispatch", "increment", #"{"path":"/n"}"#, "--idempotency-key", "k1"]
        _ = await Tool.run(story.live + ["dispatch", "set", #"{"path":"/n","value":0}"#])
        #expect(await Tool.run(arguments).output == "seq 2\n")
        let retry = await Tool.run(arguments)
        #expect(retry.output == "seq 2 (already dispatched with this idempotency key; nothing new applied)\n")
        let json = await Tool.run(arguments + ["--json"])
        #expect(try json.jsonLines == [["seq": 2, "duplicate": true]])
        #expect(await Tool.run(story.live + ["get", "/n"]).output == "1\n")
    }

    @Test func writingOfflineIsRefused() async throws {
        let story = try await StoryDaemon.started()
        for arguments in [["dispatch", "set", #"{"path":"/n","value":1}"#], ["revert", "3"]] {
            let run = await Tool.run(story.offline + arguments)
            #expect(run.status == 64)
            #expect(run.errors.contains("dispatching needs a running daemon"), "\(run.errors)")
        }
    }

    @Test func revertRestoresAnEarlierStateWithoutRewritingHistory() async throws {
        let story = try await StoryDaemon.started()
        let revert = await Tool.run(story.live + ["revert", "3"])
        #expect(revert.output == "seq 9: the state is now what it was at seq 3\n", "\(revert.errors)")
        #expect(await Tool.run(story.live + ["get", "/character/hp"]).output == "6\n")
        let log = try await Tool.run(story.offline + ["log", "--from", "9", "--json"]).jsonLines
        #expect(log.map { $0["type"] } == ["@revert"])
        #expect(log.first?["payload"] == ["to": 3])
        // History is intact: the state at 8 is still there.
        #expect(await Tool.run(story.offline + ["get", "/character/hp", "--at", "8"]).output == "-4\n")
    }

    @Test(arguments: Access.allCases) func watchFollowsChangesInEveryMode(_ access: Access) async throws {
        let story = try await StoryDaemon.started()
        // Separate processes, as people run them (one process opens a data directory once).
        let place = story.arguments(access)
        let values = try RunningProgram("reel", ["watch", "/character/hp", "--json", "--count", "2"] + place)
        let patches = try RunningProgram("reel", ["watch", "/character", "--mode", "patch", "--json", "--count", "2"] + place)
        let actions = try RunningProgram("reel", ["watch", "--mode", "actions", "--since", "6", "--json", "--count", "2"] + place)
        for watcher in [values, patches, actions] { try await watcher.waitForLines(1) }
        try await actions.waitForLines(2)  // what it missed since seq 6 comes first
        for _ in 0..<2 {
            let hit = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/character/hp","by":-1}"#])
            try #require(hit.status == 0)
            // Offline watches poll every 200 ms: let each see this change on its own.
            try await values.waitForLines(hit.output == "seq 9\n" ? 2 : 3)
            try await patches.waitForLines(hit.output == "seq 9\n" ? 2 : 3)
            // The actions watcher's second batch is seq 9 alone only if it saw 9 before 10 came.
            if hit.output == "seq 9\n" { try await actions.waitForLines(3) }
        }
        let valueLines = try await values.finish().jsonLines
        #expect(valueLines == [["seq": 8, "value": -4], ["seq": 9, "value": -5], ["seq": 10, "value": -6]])
        let patchLines = try await patches.finish().jsonLines
        #expect(patchLines.first == ["seq": 8, "value": ["hp": -4, "name": "Hero"]])
        #expect(patchLines.dropFirst().map { $0["patch"] } == [
            [["op": "replace", "path": "/hp", "value": -5]], [["op": "replace", "path": "/hp", "value": -6]],
        ])
        let actionLines = try await actions.finish().jsonLines
        #expect(actionLines.first == ["seq": 6])
        let seqs = actionLines.dropFirst().flatMap { $0["actions"]?.arrayValue ?? [] }.map { $0["seq"] }
        #expect(seqs == [7, 8, 9], "\(actionLines)")
    }

    @Test func logFollowPrintsNewActionsAsTheyCome() async throws {
        let story = try await StoryDaemon.started()
        // Through a proxy, to see when the command has subscribed: only then come the new actions.
        let proxy = try SocketProxy(listeningAt: story.directory.sub("proxy.sock"), forwardingTo: story.daemon.socketPath)
        defer { proxy.stop() }
        async let follow = Tool.run(["--socket", proxy.path, "log", "--from", "7", "--follow", "--limit", "4", "--json"])
        try await waitUntil("the command to subscribe") { proxy.requestLines.contains { $0.contains(#""method":"subscribe""#) } }
        for _ in 0..<2 {
            _ = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/character/hp","by":-1}"#])
        }
        let lines = try await follow.jsonLines
        #expect(lines.map { $0["seq"] } == [7, 8, 9, 10])
    }

    @Test func logFollowCanStartAtASeqStillToCome() async throws {
        let story = try await StoryDaemon.started()
        // Through a proxy, to see when the command has subscribed: only then come the new actions.
        let proxy = try SocketProxy(listeningAt: story.directory.sub("proxy.sock"), forwardingTo: story.daemon.socketPath)
        defer { proxy.stop() }
        async let follow = Tool.run(["--socket", proxy.path, "log", "--from", "10", "--follow", "--limit", "1", "--json"])
        try await waitUntil("the command to subscribe") { proxy.requestLines.contains { $0.contains(#""method":"subscribe""#) } }
        for _ in 0..<2 {
            _ = await Tool.run(story.live + ["dispatch", "increment", #"{"path":"/character/hp","by":-1}"#])
        }
        let lines = try await follow.jsonLines
        #expect(lines.map { $0["seq"] } == [10])
    }
}
