import ReelJSON
import ReelStore
import Testing

/// The structural digest a shadow replay compares two versions' parts by: the same for the same
/// value however its objects were built, different for any change.
struct ShadowDigestTests {
    @Test func objectsDigestAlikeWhateverTheirMembersOrder() {
        var forward: JSONObject = [:]
        var backward: JSONObject = [:]
        let keys = (0..<200).map { "k\($0)" }
        for (index, key) in keys.enumerated() { forward[key] = ["n": .int(Int64(index)), "tags": ["a", "b"]] }
        for (index, key) in keys.enumerated().reversed() { backward[key] = ["tags": ["a", "b"], "n": .int(Int64(index))] }
        #expect(ShadowDigest.structuralHash(of: .object(forward)) == ShadowDigest.structuralHash(of: .object(backward)))
    }

    @Test func anyChangeChangesTheDigest() {
        let base: JSONValue = ["hp": 12, "name": "Slime", "tags": ["a", "b"], "boss": false, "loot": .null, "x": 1.5]
        let variants: [JSONValue] = [
            ["hp": 11, "name": "Slime", "tags": ["a", "b"], "boss": false, "loot": .null, "x": 1.5],
            ["hp": 12, "name": "Slim", "tags": ["a", "b"], "boss": false, "loot": .null, "x": 1.5],
            ["hp": 12, "name": "Slime", "tags": ["b", "a"], "boss": false, "loot": .null, "x": 1.5],
            ["hp": 12, "name": "Slime", "tags": ["a", "b"], "boss": true, "loot": .null, "x": 1.5],
            ["hp": 12, "name": "Slime", "tags": ["a", "b"], "boss": false, "x": 1.5],
            ["hp": 12.0, "name": "Slime", "tags": ["a", "b"], "boss": false, "loot": .null, "x": 1.5],
            ["hp": 12, "name": "Slime", "tags": ["a", "b"], "boss": false, "loot": .null, "y": 1.5],
            ["hp": 12, "name": "Slime", "tags": ["a", ["b"]], "boss": false, "loot": .null, "x": 1.5],
        ]
        let digest = ShadowDigest.structuralHash(of: base)
        var seen: Set<UInt64> = [digest]
        for variant in variants {
            let other = ShadowDigest.structuralHash(of: variant)
            #expect(other != digest, "\(variant.jsonString)")
            seen.insert(other)
        }
        #expect(seen.count == variants.count + 1, "every variant digests differently from the others too")
        // Members that trade values are a change.
        #expect(ShadowDigest.structuralHash(of: ["a": 1, "b": 2]) != ShadowDigest.structuralHash(of: ["a": 2, "b": 1]))
        #expect(ShadowDigest.structuralHash(of: []) != ShadowDigest.structuralHash(of: [:]))
        #expect(ShadowDigest.structuralHash(of: "") != ShadowDigest.structuralHash(of: .null))
    }
}
