import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// Branches through the real executables: a running `reeld` forks its history, takes dispatches
/// on the branch, answers reads of it live, and the same reads offline on its data directory;
/// the main history, `verify` and `export` never see the branch.
@Suite(.serialized, .timeLimit(.minutes(5))) struct BranchTests {
    static func reel(_ arguments: [String], _ daemon: SpawnedDaemon) async throws -> ProgramResult {
        try await runProgram("reel", arguments + ["--socket", daemon.socketPath])
    }

    static func json(_ result: ProgramResult) throws -> JSONValue {
        #expect(result.status == 0, "\(result.errors)")
        return try JSONValue(parsing: result.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func aBranchForksTheHistoryAndLeavesTheMainOneAsItWas() async throws {
        let directory = try TemporaryDirectory("reel-branch")
        let daemon = SpawnedDaemon(dataDirectory: directory.sub("data"), socketPath: directory.sub("reel.sock"))
        try await daemon.start()
        for n in 1...5 { #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":\#(n)}"#], daemon).status == 0) }

        let created = try Self.json(try await Self.reel(["branch", "create", "experiment", "--at", "3", "--json"], daemon))
        #expect(created["name"] == "experiment")
        #expect(created["at"] == 3)
        #expect(created["seq"] == 3)
        let first = try await Self.reel(["dispatch", "set", #"{"path":"/m","value":"x"}"#, "--branch", "experiment"], daemon)
        #expect(first.output.contains("seq 4"), "\(first.output)\(first.errors)")
        let second = try await Self.reel(["dispatch", "increment", #"{"path":"/n","by":10}"#, "--branch", "experiment"], daemon)
        #expect(second.output.contains("seq 5"), "\(second.output)\(second.errors)")
        #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":6}"#], daemon).status == 0)

        // The branch: the main history's state at 3, then its own two actions.
        #expect(try Self.json(try await Self.reel(["get", "--branch", "experiment", "--json"], daemon)) == ["seq": 5, "value": ["m": "x", "n": 13]])
        #expect(try Self.json(try await Self.reel(["get", "--branch", "experiment", "--at", "2", "--json"], daemon))["value"] == ["n": 2])
        // The main history: six actions of its own, none of the branch's.
        #expect(try Self.json(try await Self.reel(["get", "--json"], daemon)) == ["seq": 6, "value": ["n": 6]])
        let mainLog = try await Self.reel(["log", "--json"], daemon)
        #expect(mainLog.output.split(separator: "\n").count == 6)
        #expect(!mainLog.output.contains(#""m""#))
        let branchLog = try await Self.reel(["log", "--json", "--branch", "experiment"], daemon)
        let seqs = try branchLog.output.split(separator: "\n").map { try JSONValue(parsing: String($0))["seq"] }
        #expect(seqs == [1, 2, 3, 4, 5], "\(branchLog.output)\(branchLog.errors)")
        #expect(branchLog.output.contains(#""path":"/m""#))

        // Compared: with the main history at their latest seqs, and within the branch.
        let againstMain = try Self.json(try await Self.reel(["diff", "--branch", "experiment", "--json"], daemon))
        #expect(againstMain["patch"] == [["op": "add", "path": "/m", "value": "x"], ["op": "replace", "path": "/n", "value": 13]], "\(againstMain)")
        let within = try Self.json(try await Self.reel(["diff", "3", "5", "--branch", "experiment", "--json"], daemon))
        #expect(within["patch"] == [["op": "add", "path": "/m", "value": "x"], ["op": "replace", "path": "/n", "value": 13]])

        // Two branches, compared at their latest seqs.
        #expect(try await Self.reel(["branch", "create", "other", "--at", "1"], daemon).status == 0)
        let twoBranches = try Self.json(try await Self.reel(["diff", "--branch", "other", "--branch", "experiment", "--json"], daemon))
        #expect(twoBranches["patch"] == [["op": "add", "path": "/m", "value": "x"], ["op": "replace", "path": "/n", "value": 13]], "\(twoBranches)")

        // Offline, on the data directory the daemon writes: the same answers.
        let offline = ["--data-dir", daemon.dataDirectory]
        let offlineGet = try await runProgram("reel", ["get", "--branch", "experiment", "--json"] + offline)
        #expect(try Self.json(offlineGet) == ["seq": 5, "value": ["m": "x", "n": 13]])
        let listed = try await runProgram("reel", ["branch", "list", "--json"] + offline)
        let names = try listed.output.split(separator: "\n").map { try JSONValue(parsing: String($0))["name"] }
        #expect(names == ["experiment", "other"], "\(listed.output)\(listed.errors)")
        let refused = try await runProgram("reel", ["branch", "create", "late", "--at", "1"] + offline)
        #expect(refused.status == 64)
        #expect(refused.errors.contains("creating a branch needs a running daemon"), "\(refused.errors)")

        // Verify and export read the main history alone.
        let verified = try await Self.reel(["verify"], daemon)
        #expect(verified.status == 0)
        #expect(verified.output.contains("verified 6 actions"), "\(verified.output)")
        let exported = try await Self.reel(["export"], daemon)
        #expect(exported.output.split(separator: "\n").count == 6)

        // Refusals: a name taken, a seq beyond the latest, a name not allowed, a branch unknown,
        // an expected seq that is not the branch's latest.
        let taken = try await Self.reel(["branch", "create", "experiment", "--at", "1"], daemon)
        #expect(taken.status == 2)
        #expect(taken.errors.contains("a branch named 'experiment' exists already"), "\(taken.errors)")
        let beyond = try await Self.reel(["branch", "create", "later", "--at", "60"], daemon)
        #expect(beyond.errors.contains("seq 60 is beyond the latest seq 6"), "\(beyond.errors)")
        #expect(try await Self.reel(["branch", "create", "no spaces"], daemon).status == 64)
        let unknown = try await Self.reel(["dispatch", "set", #"{"path":"/m","value":1}"#, "--branch", "nowhere"], daemon)
        #expect(unknown.errors.contains("no branch named 'nowhere'"), "\(unknown.errors)")
        let stale = try await Self.reel(["dispatch", "set", #"{"path":"/m","value":1}"#, "--branch", "experiment", "--expected-seq", "4"], daemon)
        #expect(stale.status == 2)
        #expect(stale.errors.contains("the latest seq of branch 'experiment' is 5"), "\(stale.errors)")
        let rejected = try await Self.reel(["dispatch", "increment", #"{"path":"/m"}"#, "--branch", "experiment"], daemon)
        #expect(rejected.status == 2, "\(rejected.errors)")

        // Followed live (a subscription to the branch): `watch --branch` sees the branch's next
        // action, not the main history's.
        let watch = try RunningProgram("reel", ["watch", "/n", "--branch", "experiment", "--count", "1", "--json", "--socket", daemon.socketPath])
        try await watch.waitForLines(1)
        #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":100}"#], daemon).status == 0)
        #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":-1}"#, "--branch", "experiment"], daemon).status == 0)
        let watched = try await watch.finish()
        #expect(watched.status == 0, "\(watched.errors)")
        #expect(watched.output.split(separator: "\n").map(String.init) == [#"{"seq":5,"value":13}"#, #"{"seq":6,"value":-1}"#], "\(watched.output)")
        // Offline, the data directory the daemon writes is polled: the same next change.
        let offlineWatch = try RunningProgram("reel", ["watch", "/n", "--branch", "experiment", "--count", "1", "--json", "--data-dir", daemon.dataDirectory])
        try await offlineWatch.waitForLines(1)
        #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":13}"#, "--branch", "experiment"], daemon).status == 0)
        let polled = try await offlineWatch.finish()
        #expect(polled.output.split(separator: "\n").map(String.init) == [#"{"seq":6,"value":-1}"#, #"{"seq":7,"value":13}"#], "\(polled.output)\(polled.errors)")

        // A restart keeps the branch and goes on from its latest state.
        #expect(try await daemon.stop() == 0)
        try await daemon.start()
        let third = try await Self.reel(["dispatch", "increment", #"{"path":"/n"}"#, "--branch", "experiment"], daemon)
        #expect(third.output.contains("seq 8"), "\(third.output)\(third.errors)")
        #expect(try Self.json(try await Self.reel(["get", "/n", "--branch", "experiment", "--json"], daemon)) == ["seq": 8, "value": 14])

        #expect(try await Self.reel(["branch", "delete", "experiment"], daemon).status == 0)
        let gone = try await Self.reel(["get", "--branch", "experiment"], daemon)
        #expect(gone.status == 2)
        let left = try await Self.reel(["branch", "list", "--json"], daemon)
        #expect(left.output.split(separator: "\n").count == 1, "\(left.output)")
        #expect(try await daemon.stop() == 0)
    }

    /// `subscribe` with `branch`, over the socket: the branch's value now, then an update for each
    /// change of the branch (none for the main history's), the actions of the branch in
    /// `actions` mode, and nothing more after `unsubscribe`.
    @Test func aSubscriptionFollowsABranch() async throws {
        let directory = try TemporaryDirectory("reel-branch")
        let daemon = SpawnedDaemon(dataDirectory: directory.sub("data"), socketPath: directory.sub("reel.sock"))
        try await daemon.start()
        for n in 1...3 { #expect(try await Self.reel(["dispatch", "set", #"{"path":"/n","value":\#(n)}"#], daemon).status == 0) }
        #expect(try await Self.reel(["branch", "create", "b", "--at", "2"], daemon).status == 0)
        try await TestConnection.open(socketPath: daemon.socketPath) { connection in
            let values = try await connection.request(1, "subscribe", ["path": "/n", "branch": "b"])
            #expect(values["result"]?["seq"] == 2, "\(values)")
            #expect(values["result"]?["value"] == 2)
            let subscription = try #require(values["result"]?["subscription"])
            let actions = try await connection.request(2, "subscribe", ["mode": "actions", "branch": "b"])
            let actionsSubscription = try #require(actions["result"]?["subscription"])
            // The main history's dispatch is not the branch's; the branch's is.
            #expect(try await connection.request(3, "dispatch", ["action": ["type": "set", "payload": ["path": "/n", "value": 30]]])["result"] == ["seq": 4])
            #expect(try await connection.request(4, "dispatch", ["action": ["type": "set", "payload": ["path": "/n", "value": 20]], "branch": "b"])["result"] == ["seq": 3])
            var updates: [JSONValue] = []
            while updates.count < 2 { updates.append(try await connection.receive()) }
            let byKind = Dictionary(uniqueKeysWithValues: updates.map { ($0["params"]?["subscription"] == subscription ? "value" : "actions", $0["params"]!) })
            #expect(byKind["value"]?["seq"] == 3)
            #expect(byKind["value"]?["value"] == 20, "\(updates)")
            #expect(byKind["actions"]?["subscription"] == actionsSubscription)
            #expect(byKind["actions"]?["actions"]?.arrayValue?.map { $0["payload"]?["value"] } == [20], "\(updates)")
            // Unsubscribed: the next change of the branch reaches the actions subscription only.
            #expect(try await connection.request(5, "unsubscribe", ["subscription": subscription])["result"] == [:])
            #expect(try await connection.request(6, "dispatch", ["action": ["type": "set", "payload": ["path": "/n", "value": 21]], "branch": "b"])["result"] == ["seq": 4])
            let next = try await connection.receive()
            #expect(next["params"]?["subscription"] == actionsSubscription, "\(next)")
            #expect(next["params"]?["seq"] == 4)
            // A branch that does not exist is refused.
            let unknown = try await connection.request(7, "subscribe", ["branch": "nowhere"])
            #expect(unknown["error"]?["message"]?.stringValue?.contains("no branch named 'nowhere'") == true, "\(unknown)")
        }
        #expect(try await daemon.stop() == 0)
    }
}
