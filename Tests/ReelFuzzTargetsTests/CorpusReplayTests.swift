import Foundation
import ReelFuzzTargets
import Testing

/// Every seed of every fuzz target, and every input that ever crashed one (kept in
/// `Tools/Fuzz/corpus/<target>/`, crashers named `crash-*`), run through the same functions the
/// fuzzers drive. A crash here crashes the test run.
struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/Fuzz/corpus")

    @Test(arguments: FuzzTarget.allCases) func everyInputOfTheCorpusRuns(_ target: FuzzTarget) throws {
        let directory = Self.corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!names.isEmpty, "no seeds for \(target.rawValue) in \(directory.path)")
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            bytes.withUnsafeBytes { target.run($0) }
        }
    }
}
