import Foundation
import ReelCore
import ReelExamples
import ReelJSON
import ReelStore
import ReelTestSupport
import Testing

/// `testgen` through the real executables: `reel-rpg testgen` writes files that a scratch package
/// depending on this one compiles and runs with `swift test`: they pass against the reducers that
/// recorded the history, and the same slice run against other rules fails naming the seq and the
/// field with its expected and actual value.
@Suite(.serialized, .timeLimit(.minutes(15)), .heavy) struct TestgenTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var rulesOne: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["REEL_RPG_RULES"] = "1"
        return environment
    }

    /// Seq 1 loads a save; 2 and 3 attack the slime (12 HP, the hero's attack 7: 5, then -2 by the
    /// rules of version 1); 4 the goblin attacks; 5 reverts to seq 2; 6 attacks the goblin; 7 the
    /// slime attacks; 8 reverts to seq 7; 9 attacks the goblin.
    static func record(into path: String) async throws {
        let store = try Store(path: path, definition: RPGApp.definition(rules: 1))
        let save: JSONValue = [
            "character": ["attack": 7, "hp": 30, "name": "Ada Lovelace"],
            "enemies": [["attack": 3, "hp": 12, "id": "slime", "name": "Slime"], ["attack": 5, "hp": 20, "id": "goblin", "name": "Gob"]],
            "slot": "autosave",
        ]
        try await store.dispatch(Action(type: "rpg/setSaveData", payload: save))
        for _ in 0..<2 { try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["enemyId": "slime"])) }
        try await store.dispatch(Action(type: "rpg/attackCharacter", payload: ["enemyId": "goblin"]))
        try await store.dispatch(StoreAction.revert(to: 2).action)
        try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["enemyId": "goblin"]))
        // A revert to the seq before it: nothing changes, and the state stays what 2…7 made it.
        try await store.dispatch(Action(type: "rpg/attackCharacter", payload: ["enemyId": "slime"]))
        try await store.dispatch(StoreAction.revert(to: 7).action)
        try await store.dispatch(Action(type: "rpg/attackEnemy", payload: ["enemyId": "goblin"]))
        await store.close()
    }

    static func testgen(_ data: String, _ arguments: [String]) async throws -> String {
        let run = try await runProgram("reel-rpg", ["testgen", "--data-dir", data, "--from", "2", "--to", "9"] + arguments, environment: rulesOne)
        #expect(run.status == 0, "\(run.errors)")
        return run.output
    }

    @Test func generatedTestsCompilePassAndFailWithTheFieldThatChanged() async throws {
        let directory = try TemporaryDirectory("reel-testgen")
        let data = directory.sub("data")
        try await Self.record(into: data)

        let passing = try await Self.testgen(data, ["--name", "PassingHistory"])
        #expect(passing.contains("try replay.revert(5, change: "), "\(passing)")
        #expect(passing.contains(##"try replay.apply(3, "rpg/attackEnemy", #"{"damage":7,"enemyId":"slime"}"#"##), "\(passing)")
        let redacted = try await Self.testgen(data, ["--name", "RedactedHistory", "--redact", "/character/name", "--path", "/enemies"])
        #expect(!redacted.contains("Ada Lovelace"))
        #expect(redacted.contains(#""name":"redacted-1""#), "\(redacted)")
        // The same slice, expected of the rules of version 2 (an enemy's HP stops at zero).
        let changed = try await Self.testgen(data, ["--name", "RulesTwo", "--definition", "RPGApp.definition(rules: 2)"])
        #expect(changed.contains("RPGApp.definition(rules: 2)"))

        // The stock reducer's history, by the stock `reel`.
        let stockData = directory.sub("stock")
        do {
            let store = try Store(path: stockData, definition: .stock)
            try await store.dispatch(Action(type: "set", payload: ["path": "/cart", "value": ["items": [], "note": "say \"#hi\"\\#n"]]))
            try await store.dispatch(Action(type: "patch", payload: [["op": "add", "path": "/cart/items/-", "value": ["sku": "a-1", "qty": 2]]]))
            try await store.dispatch(Action(type: "increment", payload: ["path": "/cart/items/0/qty", "by": 3]))
            try await store.dispatch(Action(type: "merge", payload: ["cart": ["note": .null], "user": "u-7"]))
            await store.close()
        }
        // A package of its own that depends on this one, as an app's test target would.
        let package = directory.sub("generated")
        let tests = package + "/Tests/GeneratedTests"
        try FileManager.default.createDirectory(atPath: tests, withIntermediateDirectories: true)
        let stockRun = try await runProgram("reel", ["testgen", "--data-dir", stockData, "--from", "2", "--to", "4", "--name", "StockHistory"])
        #expect(stockRun.status == 0, "\(stockRun.errors)")
        let stock = stockRun.output
        #expect(stock.contains("HistoryReplay(StoreDefinition<JSONValue>.stock, after: 1, state: ##\""), "\(stock)")
        // The start state in a file of its own, read from beside the test.
        let stateFileRun = try await runProgram(
            "reel", ["testgen", "--data-dir", stockData, "--from", "3", "--to", "4", "--name", "StockFromFile", "--state-file", tests + "/StockFromFile.state.json"]
        )
        #expect(stateFileRun.status == 0, "\(stateFileRun.errors)")
        let fromFile = stateFileRun.output
        #expect(fromFile.contains(#"after: 2, stateFile: "StockFromFile.state.json")"#), "\(fromFile)")
        let stateText = try String(contentsOfFile: tests + "/StockFromFile.state.json", encoding: .utf8)
        #expect(try JSONValue(parsing: stateText).value(at: JSONPointer("/cart/items/0/sku")) == "a-1")
        try FileManager.default.createSymbolicLink(atPath: package + "/Reel", withDestinationPath: Self.repository.path)
        try """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "Generated",
                dependencies: [.package(path: "Reel")],
                targets: [
                    .testTarget(name: "GeneratedTests", dependencies: [
                        .product(name: "ReelTesting", package: "Reel"), .product(name: "ReelCore", package: "Reel"),
                        .product(name: "ReelJSON", package: "Reel"), .product(name: "ReelExamples", package: "Reel"),
                    ]),
                ]
            )

            """.write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
        for (name, text) in [("PassingHistory", passing), ("RedactedHistory", redacted), ("RulesTwo", changed), ("StockHistory", stock), ("StockFromFile", fromFile)] {
            try text.write(toFile: "\(tests)/\(name).swift", atomically: true, encoding: .utf8)
        }
        let swift = URL(fileURLWithPath: "/usr/bin/env")
        let build = try await runCommand(swift, ["swift", "build", "--build-tests", "--package-path", package], currentDirectory: package)
        try #require(build.status == 0, "the generated tests do not compile:\n\(build.output)\n\(build.errors)")

        for suite in ["PassingHistory", "RedactedHistory", "StockHistory", "StockFromFile"] {
            let run = try await runCommand(swift, ["swift", "test", "--skip-build", "--package-path", package, "--filter", suite], currentDirectory: package)
            #expect(run.status == 0, "\(suite):\n\(run.output)\n\(run.errors)")
            #expect(run.output.contains("passed"), "\(run.output)")
        }
        let failing = try await runCommand(swift, ["swift", "test", "--skip-build", "--package-path", package, "--filter", "RulesTwo"], currentDirectory: package)
        #expect(failing.status != 0)
        let output = failing.output + failing.errors
        #expect(output.contains("after seq 3 (rpg/attackEnemy) the state differs from the recorded one in 1 field:"), "\(output)")
        #expect(output.contains("/enemies/0/hp: expected -2, got 0"), "\(output)")
    }

    /// Live against the daemon that recorded it, or offline on its data directory: the same file.
    @Test func liveAndOfflineWriteTheSameTest() async throws {
        let directory = try TemporaryDirectory("reel-testgen")
        let daemon = SpawnedDaemon(dataDirectory: directory.sub("data"), socketPath: directory.sub("reel.sock"))
        try await daemon.start()
        for (type, payload) in [("set", #"{"path":"/n","value":1}"#), ("set", #"{"path":"/m","value":"x"}"#), ("increment", #"{"path":"/n","by":2}"#), ("remove", #"{"path":"/m"}"#)] {
            let sent = try await runProgram("reel", ["dispatch", type, payload, "--socket", daemon.socketPath])
            #expect(sent.status == 0, "\(sent.errors)")
        }
        let live = try await runProgram("reel", ["testgen", "--from", "2", "--to", "4", "--socket", daemon.socketPath])
        #expect(live.status == 0, "\(live.errors)")
        let offline = try await runProgram("reel", ["testgen", "--from", "2", "--to", "4", "--data-dir", daemon.dataDirectory])
        #expect(offline.status == 0, "\(offline.errors)")
        #expect(live.output == offline.output)
        #expect(live.output.contains(##"try replay.apply(3, "increment", #"{"by":2,"path":"/n"}"#"##), "\(live.output)")
        #expect(try await daemon.stop() == 0)
    }

    @Test func testgenSaysWhatItNeeds() async throws {
        let directory = try TemporaryDirectory("reel-testgen")
        let data = directory.sub("data")
        try await Self.record(into: data)
        // Other reducers than the recording ones cannot vouch for the expectations.
        var rulesTwo = Self.rulesOne
        rulesTwo["REEL_RPG_RULES"] = "2"
        let other = try await runProgram("reel-rpg", ["testgen", "--data-dir", data, "--from", "2", "--to", "9"], environment: rulesTwo)
        #expect(other.status != 0)
        #expect(other.errors.contains("was folded by rpg@1 (its checkpoint at seq 9), not by this program's rpg@2"), "\(other.errors)")
        // The stock reel knows its own reducers' module; a slice must lie in the log.
        let beyond = try await runProgram("reel-rpg", ["testgen", "--data-dir", data, "--from", "2", "--to", "60"], environment: Self.rulesOne)
        #expect(beyond.status == 2, "\(beyond.errors)")
        #expect(beyond.errors.contains("seq 60 is beyond the latest seq 9"), "\(beyond.errors)")
        let backwards = try await runProgram("reel-rpg", ["testgen", "--data-dir", data, "--from", "5", "--to", "2"], environment: Self.rulesOne)
        #expect(backwards.status == 64)
        let badName = try await runProgram("reel-rpg", ["testgen", "--data-dir", data, "--from", "2", "--to", "3", "--name", "9lives"], environment: Self.rulesOne)
        #expect(badName.status == 64)
        #expect(badName.errors.contains("is not a Swift type name"), "\(badName.errors)")
    }
}
