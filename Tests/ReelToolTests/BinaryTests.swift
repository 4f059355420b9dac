import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// The `reel` executable itself: stdin, pipes, exit statuses.
@Suite(.serialized, .timeLimit(.minutes(1)), .heavy) struct BinaryTests {
    @Test func dispatchReadsNDJSONActionsFromStdin() async throws {
        let story = try await StoryDaemon.started(seed: false)
        let input = """
            {"type":"set","payload":{"path":"/n","value":1}}
            {"type":"increment","payload":{"path":"/n","by":2}}

            {"type":"append","payload":{"path":"/missing/list","value":"x"}}
            """
        let run = try await runProgram("reel", ["dispatch", "-", "--socket", story.daemon.socketPath], input: input)
        #expect(run.status == 2, "an append under a missing parent is refused: \(run.output)")
        #expect(run.errors.hasPrefix("reel: append: "), "\(run.errors)")
        #expect(run.output == "seq 1\nseq 2\n")
        let batch = try await runProgram(
            "reel", ["dispatch", "-", "--batch", "--json", "--socket", story.daemon.socketPath],
            input: #"{"type":"set","payload":{"path":"/log","value":[]}}"# + "\n" + #"{"type":"append","payload":{"path":"/log","value":"x"}}"#
        )
        #expect(batch.output == #"{"seqs":[3,4]}"# + "\n", "\(batch.errors)")
        let payload = try await runProgram("reel", ["dispatch", "set", "-", "--socket", story.daemon.socketPath], input: #"{"path":"/n","value":7}"#)
        #expect(payload.output == "seq 5\n", "\(payload.errors)")
    }

    @Test func pipedOutputIsPlainAndHelpIsThere() async throws {
        let story = try await StoryDaemon.started()
        let piped = try await runProgram("reel", ["diff", "1", "8", "--socket", story.daemon.socketPath])
        #expect(piped.output == "~ /character/hp  10 → -4\n")
        let help = try await runProgram("reel", ["bisect", "--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("exists/missing"))
        let wrong = try await runProgram("reel", ["get", "--at", "minus-one"])
        #expect(wrong.status == 64)
    }
}
