import ReelJSON
import Testing

/// What a recorder lists for an edit does not depend on what it recorded before: a long run, whose
/// paths are found again by their tokens once its tree is large, and a merge that records level by
/// level from each level's node, list what a fresh recorder lists, and what comparing the
/// documents pointer by pointer finds.
@Suite struct JSONChangeRecorderTests {
    /// SplitMix64: the same edits for the same seed.
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Every pointer of `value` (escaped), with the value there.
    static func pointers(of value: JSONValue, at pointer: String = "", into result: inout [String: JSONValue]) {
        result[pointer] = value
        switch value {
        case .object(let members):
            for (key, member) in members { pointers(of: member, at: JSONChangeRecorder.appending(key, to: pointer), into: &result) }
        case .array(let elements):
            for (index, element) in elements.enumerated() { pointers(of: element, at: pointer + "/\(index)", into: &result) }
        default:
            break
        }
    }

    /// The pointers whose value differs between `before` and `after`, absence counting as a value.
    static func differing(_ before: JSONValue, _ after: JSONValue) -> Set<String> {
        var old: [String: JSONValue] = [:]
        var new: [String: JSONValue] = [:]
        pointers(of: before, into: &old)
        pointers(of: after, into: &new)
        return Set(Set(old.keys).union(new.keys).filter { old[$0] != new[$0] })
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func aLongRunListsEachEditAsAFreshRecorderDoes(seed: UInt64) {
        var random = Random(state: seed)
        var long = JSONChangeRecorder()
        // 6,000 leaves under 60 branches of 100, some deeper: past the size from which paths are
        // found again by their tokens.
        func path() -> [String] {
            let leaf = Int.random(in: 0..<6_000, using: &random)
            var tokens = ["b\(leaf % 60)", "l\(leaf)"]
            if leaf % 7 == 0 { tokens.append(leaf % 2 == 0 ? "deep" : "~/odd") }
            return tokens
        }
        for edit in 0..<30_000 {
            long.startEdit()
            var fresh = JSONChangeRecorder()
            // One to three changes an edit, sharing ancestors (marked once each), at times an
            // object replaced whole or a change that is none.
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let tokens = path()
                let old: JSONValue? = edit % 5 == 0 ? ["x": .int(Int64(edit)), "y": 1] : .int(Int64(edit))
                let new: JSONValue? = edit % 11 == 0 ? old : (edit % 13 == 0 ? .none : ["x": .int(Int64(edit + 1)), "y": 1])
                long.record(at: tokens, from: old, to: new)
                fresh.record(at: tokens, from: old, to: new)
            }
            guard long.changes == fresh.changes else {
                Issue.record("seed \(seed), edit \(edit): \(long.changes) where a fresh recorder lists \(fresh.changes)")
                return
            }
        }
        #expect(long.tree.count > 6_000)
    }

    @Test(arguments: [4, 5, 6, 7] as [UInt64])
    func aMergeRecordsThePointersWhoseValueItChanged(seed: UInt64) {
        var random = Random(state: seed)
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth < 3 ? 6 : 3), using: &random) {
            case 0: return .int(Int64.random(in: 0..<3, using: &random))
            case 1: return .null
            case 2: return .string(["a", "b"].randomElement(using: &random)!)
            case 3: return .array((0..<Int.random(in: 0..<3, using: &random)).map { _ in value(depth + 1) })
            default:
                let keys = ["k", "m", "a/b", "~t", "0"].shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random))
                return .object(JSONObject(uniqueKeysWithValues: keys.map { ($0, value(depth + 1)) }))
            }
        }
        // One recorder through every edit, as a build's part keeps one.
        var recorder = JSONChangeRecorder()
        var document = value(0)
        for edit in 0..<2_000 {
            let patch = value(0)
            var expected = document
            JSONMergePatch.apply(patch, to: &expected)
            recorder.startEdit()
            var merged = document
            JSONMergePatch.apply(patch, to: &merged, recordingInto: &recorder)
            #expect(merged == expected, "seed \(seed), edit \(edit): merged differently")
            let changes = recorder.changes
            #expect(changes.unfollowed.isEmpty)
            guard changes.changed == Self.differing(document, merged) else {
                Issue.record("seed \(seed), edit \(edit): \(patch) over \(document) recorded \(changes.changed)")
                return
            }
            document = merged
        }
    }
}
