import Foundation
import ReelJSON
import ReelProtocol
import ReelStorage
import ReelTestSupport
import Testing

/// The access policy of a real `reeld`, met by peers outside its allow lists: root outside lists
/// set to `none`, and, when the tests run as root, a second uid (`nobody`) connecting through
/// `setpriv`. A refused request is answered 1004 before anything is served: nothing is logged,
/// no subscription starts.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldAccessPolicyTests {
    /// One valid request of every method, the `id` being the index: the permission is checked
    /// after the params, so each must pass its params check to reach the policy.
    static let everyMethod: [(method: String, params: JSONValue?)] = [
        ("hello", ["protocol": 1]),
        ("subscribe", ["path": "", "mode": "value"]),
        ("dispatch", Params.set("/refused", true)),
        ("dispatch", ["actions": [["type": "set", "payload": ["path": "/refused", "value": 1]]], "idempotencyKey": "k"]),
        ("get", nil),
        ("get", ["path": "/refused", "at": 0]),
        ("unsubscribe", ["subscription": "s1"]),
        ("history", ["from": 1]),
        ("diff", ["from": 0, "to": 0]),
        ("replay", ["to": 0, "skip": [1]]),
        ("stats", nil),
        ("checkpoints", nil),
        ("verify", ["from": 0, "through": 0]),
        ("backup", ["path": "/nonexistent/reel-policy-test-backup"]),
        ("bisect", ["condition": "/refused == true"]),
        ("scan", nil),
        ("digest", ["path": "/refused"]),
        ("describe", nil),
        ("find", ["condition": "exists /n"]),
        ("blame", ["path": "/n"]),
        ("handOver", ["receiver": "/nonexistent/reel-policy-test-receiver"]),
        ("takeOverProgress", ["reducer": "reel.json@2", "folded": 0, "latest": 0]),
        ("branchCreate", ["name": "policy-test", "at": 0]),
        ("branches", nil),
        ("branchDelete", ["name": "policy-test"]),
    ]

    @Test func theListHasEveryMethod() {
        #expect(Set(Self.everyMethod.map(\.method)) == Set(Method.all.map { $0.name.rawValue }))
    }

    static func lines(_ requests: [(method: String, params: JSONValue?)]) -> String {
        requests.enumerated().map { id, request in
            var message: JSONObject = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(request.method)]
            if let params = request.params { message["params"] = params }
            return JSONValue.object(message).jsonString + "\n"
        }.joined()
    }

    /// Sends `requests` pipelined, in one write, and reads a message per request: answers by id,
    /// and every update that came with them (there must be none when nothing was subscribed).
    static func exchange(
        _ connection: TestConnection, _ requests: [(method: String, params: JSONValue?)]
    ) async throws -> (answers: [Int64: JSONValue], updates: [JSONValue]) {
        try await connection.send(lines(requests))
        var answers: [Int64: JSONValue] = [:]
        var updates: [JSONValue] = []
        while answers.count < requests.count {
            let message = try await connection.receive()
            if let id = message["id"]?.intValue { answers[id] = message } else { updates.append(message) }
        }
        return (answers, updates)
    }

    static func latestSeq(_ dataDirectory: String) throws -> UInt64 {
        try DataDirectory(path: dataDirectory, reducerName: nil, options: .init(readOnly: true)).latestSeq()
    }

    @Test func aPeerInNoListIsRefusedEveryMethodAndNothingIsLogged() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            extraArguments: ["--allow-read", "none", "--allow-dispatch", "none", "--allow-admin", "none"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let (answers, updates) = try await Self.exchange(connection, Self.everyMethod)
            for (id, request) in Self.everyMethod.enumerated() {
                let answer = answers[Int64(id)]
                #expect(answer?["error"]?["code"] == 1004, "\(request.method) (id \(id)) was not refused: \(answer?.jsonString ?? "no answer")")
                #expect(answer?["result"] == nil)
            }
            #expect(updates.isEmpty, "updates reached a peer that may not read: \(updates)")
        }
        #expect(try await daemon.stop() == 0)
        #expect(try Self.latestSeq(dir.sub("data")) == 0, "a refused peer's dispatch was logged")
    }

    @Test func aPeerThatMayDispatchButNotReadGetsNoSubscriptionAndNoUpdate() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--allow-read", "none"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            // The refused subscribe, then dispatches pipelined behind it: were the subscription
            // started, the commits would reach this peer as updates before the last answer.
            let requests: [(method: String, params: JSONValue?)] = [
                ("subscribe", ["path": "", "mode": "actions"]),
                ("subscribe", ["path": "/n", "mode": "value"]),
                ("dispatch", Params.set("/n", 1)),
                ("dispatch", Params.set("/n", 2)),
                ("get", nil),
                ("hello", nil),
            ]
            let (answers, updates) = try await Self.exchange(connection, requests)
            #expect(answers[0]?["error"]?["code"] == 1004, "subscribe (actions) served: \(answers[0]?.jsonString ?? "")")
            #expect(answers[1]?["error"]?["code"] == 1004, "subscribe (value) served: \(answers[1]?.jsonString ?? "")")
            #expect(answers[2]?["result"] == ["seq": 1])
            #expect(answers[3]?["result"] == ["seq": 2])
            #expect(answers[4]?["error"]?["code"] == 1004)
            #expect(answers[5]?["error"]?["code"] == 1004)
            #expect(updates.isEmpty, "updates reached a peer that may not read: \(updates)")
        }
        #expect(try await daemon.stop() == 0)
        #expect(try Self.latestSeq(dir.sub("data")) == 2)
    }

    @Test func aPeerThatMayReadButNotDispatchSubscribesAndChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"), extraArguments: ["--allow-dispatch", "none"]
        )
        try await daemon.start()
        try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            let requests: [(method: String, params: JSONValue?)] = [
                ("subscribe", ["path": "", "mode": "actions"]),
                ("dispatch", Params.set("/n", 1)),
                ("dispatch", ["actions": [["type": "set", "payload": ["path": "/n", "value": 2]]]]),
                ("dispatch", ["action": ["type": "@revert", "payload": ["to": 0]], "idempotencyKey": "k1"]),
                ("get", nil),
                ("history", ["from": 1]),
            ]
            let (answers, updates) = try await Self.exchange(connection, requests)
            #expect(answers[0]?["result"]?["subscription"] != nil, "the reader was refused a subscription: \(answers[0]?.jsonString ?? "")")
            for id: Int64 in 1...3 {
                #expect(answers[id]?["error"]?["code"] == 1004, "dispatch \(id) was not refused: \(answers[id]?.jsonString ?? "")")
            }
            #expect(answers[4]?["result"] == ["seq": 0, "value": [:]])
            #expect(answers[5]?["result"]?["actions"] == [])
            #expect(updates.isEmpty, "an update for actions that were refused: \(updates)")
        }
        #expect(try await daemon.stop() == 0)
        #expect(try Self.latestSeq(dir.sub("data")) == 0)
    }
}

/// Another uid than the daemon's, for real: a peer run as `nobody` through `setpriv`. Only root
/// can switch users, so these run only as root (they show as skipped otherwise).
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct ReeldAccessPolicyOtherUserTests {
    static let nobody: UInt32 = 65534
    static let setpriv = "/usr/bin/setpriv"
    static let perl = "/usr/bin/perl"
    static var canRunAsNobody: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) && FileManager.default.isExecutableFile(atPath: perl)
    }

    /// Runs a peer as uid and gid 65534 that connects to `socket`, writes `requests` in one go,
    /// ends its input and prints every line the daemon sends until it closes the connection.
    static func runAsNobody(socket: String, _ requests: [(method: String, params: JSONValue?)]) async throws -> [JSONValue] {
        let peer = """
            use IO::Socket::UNIX;
            my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0]) or die "connect: $!\\n";
            local $/; my $in = <STDIN>; print $s $in; $s->flush; shutdown($s, 1);
            while (my $l = <$s>) { print $l }
            """
        let result = try await runCommand(
            URL(fileURLWithPath: setpriv),
            ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", perl, "-e", peer, socket],
            input: ReeldAccessPolicyTests.lines(requests)
        )
        try #require(result.status == 0, "the peer run as nobody failed: \(result.errors)")
        return try result.output.split(separator: "\n").map { try JSONValue(parsing: Array($0.utf8)) }
    }

    static func daemon(_ dir: borrowing TemporaryDirectory, _ policy: [String]) -> SpawnedDaemon {
        // The socket's group lets nobody connect at all; the policy decides the rest.
        SpawnedDaemon(
            dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"),
            extraArguments: ["--socket-group", "\(nobody)", "--socket-mode", "0660"] + policy
        )
    }

    @Test(.enabled(if: canRunAsNobody, "needs root, \(setpriv) and \(perl) to run a peer as another uid"))
    func anotherUserUnderTheDefaultPolicyIsRefusedEverything() async throws {
        let dir = try TemporaryDirectory()
        let daemon = Self.daemon(dir, [])
        try await daemon.start()
        let messages = try await Self.runAsNobody(socket: daemon.socketPath, ReeldAccessPolicyTests.everyMethod)
        #expect(messages.count == ReeldAccessPolicyTests.everyMethod.count, "not one answer per request: \(messages)")
        for (id, request) in ReeldAccessPolicyTests.everyMethod.enumerated() {
            let answer = messages.first { $0["id"]?.intValue == Int64(id) }
            #expect(answer?["error"]?["code"] == 1004, "\(request.method) (id \(id)) was not refused to uid \(Self.nobody): \(answer?.jsonString ?? "no answer")")
            #expect(answer?["error"]?["message"]?.stringValue?.contains("uid \(Self.nobody)") == true)
        }
        #expect(messages.allSatisfy { $0["id"] != nil }, "updates reached a peer that may not read")
        #expect(try await daemon.stop() == 0)
        #expect(try ReeldAccessPolicyTests.latestSeq(dir.sub("data")) == 0)
    }

    @Test(.enabled(if: canRunAsNobody, "needs root, \(setpriv) and \(perl) to run a peer as another uid"))
    func anotherUserInTheReadListOnlyReads() async throws {
        let dir = try TemporaryDirectory()
        let daemon = Self.daemon(dir, ["--allow-read", "self,\(Self.nobody)"])
        try await daemon.start()
        // The daemon's own user writes something to read.
        try await TestConnection.open(socketPath: daemon.socketPath) { owner throws in
            #expect(try await owner.request(1, "dispatch", Params.set("/n", 1))["result"] == ["seq": 1])
        }
        let requests: [(method: String, params: JSONValue?)] = [
            ("subscribe", ["path": "/n", "mode": "value"]),
            ("stats", nil),
            ("dispatch", Params.set("/n", 2)),  // pipelined behind a refused request: refused too
            ("dispatch", ["actions": [["type": "increment", "payload": ["path": "/n"]]], "idempotencyKey": "nobody-1"]),
            ("get", nil),
            ("history", ["from": 1]),
            ("verify", ["from": 0, "through": 1]),
        ]
        let messages = try await Self.runAsNobody(socket: daemon.socketPath, requests)
        let answers = Dictionary(messages.compactMap { message in message["id"]?.intValue.map { ($0, message) } }) { first, _ in first }
        let updates = messages.filter { $0["id"] == nil }
        #expect(answers[0]?["result"] == ["seq": 1, "subscription": "s1", "value": 1])
        for id: Int64 in [1, 2, 3, 6] {
            #expect(answers[id]?["error"]?["code"] == 1004, "\(requests[Int(id)].method) (id \(id)) was not refused: \(answers[id]?.jsonString ?? "no answer")")
        }
        #expect(answers[4]?["result"] == ["seq": 1, "value": ["n": 1]])
        #expect(answers[5]?["result"]?["actions"]?.arrayValue?.count == 1)
        #expect(updates.isEmpty, "an update for a refused dispatch: \(updates)")
        #expect(try await daemon.stop() == 0)
        #expect(try ReeldAccessPolicyTests.latestSeq(dir.sub("data")) == 1, "a refused peer's dispatch was logged")
    }
}
