import ReelCore
import ReelJSON
import ReelTesting
import Testing

/// What a generated test runs: each step folded and checked against the recorded change.
struct HistoryReplayTests {
    static let stock = StoreDefinition<JSONValue>.stock

    @Test func stepsThatMatchTheRecordingPass() throws {
        var replay = try HistoryReplay(Self.stock, after: 4, state: #"{"n":1}"#)
        try replay.apply(5, "increment", #"{"path":"/n","by":2}"#, change: #"[{"op":"replace","path":"/n","value":3}]"#)
        try replay.apply(6, "set", #"{"path":"/m","value":"x"}"#, change: #"[{"op":"add","path":"/m","value":"x"}]"#)
        try replay.revert(7, change: #"[{"op":"remove","path":"/m"},{"op":"replace","path":"/n","value":1}]"#)
        #expect(replay.state == ["n": 1])
        #expect(replay.seq == 7)
    }

    /// A generator folds without expectations and restores a `@revert`'s recorded state; a test
    /// applies the recorded changes: both end in the same state.
    @Test func foldingAndRestoringFollowsTheStateAsApplyingDoes() throws {
        var folding = try HistoryReplay(Self.stock, after: 0, state: #"{"a":1,"b":1}"#)
        try folding.fold(ActionEnvelope(seq: 1, action: Action(type: "set", payload: ["path": "/a", "value": 2]), time: .init(nanosecondsSince1970: 0), peer: .init(uid: 0, gid: 0, pid: 0)))
        try folding.fold(ActionEnvelope(seq: 2, action: Action(type: "set", payload: ["path": "/b", "value": 2]), time: .init(nanosecondsSince1970: 0), peer: .init(uid: 0, gid: 0, pid: 0)))
        try folding.restore(3, to: ["a": 2, "b": 1])
        try folding.fold(ActionEnvelope(seq: 4, action: Action(type: "increment", payload: ["path": "/a"]), time: .init(nanosecondsSince1970: 0), peer: .init(uid: 0, gid: 0, pid: 0)))
        #expect(folding.state == ["a": 3, "b": 1])

        var applying = try HistoryReplay(Self.stock, after: 0, state: #"{"a":1,"b":1}"#)
        try applying.apply(1, "set", #"{"path":"/a","value":2}"#, change: #"[{"op":"replace","path":"/a","value":2}]"#)
        try applying.apply(2, "set", #"{"path":"/b","value":2}"#, change: #"[{"op":"replace","path":"/b","value":2}]"#)
        try applying.revert(3, change: #"[{"op":"replace","path":"/b","value":1}]"#)
        try applying.apply(4, "increment", #"{"path":"/a"}"#, change: #"[{"op":"replace","path":"/a","value":3}]"#)
        #expect(applying.state == folding.state)
    }

    @Test func aChangedBehaviourNamesTheSeqTheFieldAndBothValues() throws {
        var replay = try HistoryReplay(Self.stock, after: 0, state: #"{"a":{"b":1,"c":2}}"#)
        // Recorded: the increment added 10; the reducer adds 1.
        let divergence = try #require(throws: HistoryDivergence.self) {
            try replay.apply(1, "increment", #"{"path":"/a/b"}"#, change: #"[{"op":"replace","path":"/a/b","value":11},{"op":"remove","path":"/a/c"}]"#)
        }
        #expect(divergence.seq == 1)
        #expect(divergence.description == """
            after seq 1 (increment) the state differs from the recorded one in 2 fields:
              /a/b: expected 11, got 2
              /a/c: expected nothing (absent), got 2
            """)
    }

    @Test func onlyTheChosenPathsAreCompared() throws {
        var replay = try HistoryReplay(Self.stock, after: 0, state: #"{"kept":0,"other":0}"#, paths: ["/kept"])
        // The recorded change to /other is not what the reducer makes, and is not compared.
        try replay.apply(1, "set", #"{"path":"/other","value":5}"#, change: #"[{"op":"replace","path":"/other","value":6}]"#)
        #expect(throws: HistoryDivergence.self) {
            try replay.apply(2, "set", #"{"path":"/kept","value":1}"#, change: #"[{"op":"replace","path":"/kept","value":2}]"#)
        }
    }

    @Test func aSliceHasNoGapsAndAsksForRevertsByName() throws {
        var replay = try HistoryReplay(Self.stock, after: 3, state: "{}")
        #expect(throws: HistoryReplayError.self) {
            try replay.apply(5, "set", #"{"path":"/n","value":1}"#, change: "[]")
        }
        #expect(throws: HistoryReplayError.self) {
            try replay.apply(4, "@revert", #"{"to":1}"#, change: "[]")
        }
        #expect(replay.seq == 3)
    }

    @Test func manyDifferencesAreListedTenAtATime() throws {
        var replay = try HistoryReplay(Self.stock, after: 0, state: "{}")
        let members = (0..<12).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let divergence = try #require(throws: HistoryDivergence.self) {
            try replay.apply(1, "set", #"{"path":"","value":{\#(members)}}"#, change: "[]")
        }
        #expect(divergence.differences.count == 12)
        #expect(divergence.description.hasSuffix("  … and 2 more"))
    }
}
