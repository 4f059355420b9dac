import Testing

@testable import ReelJSON

/// The stock payloads read from the binary encoding without their JSON form
/// (`JSONPatch(binary:)`, `BinaryPathPayload`): what they read is what the ordinary way reads,
/// they take the plain shapes, and they give up on everything else.
@Suite struct JSONBinaryPayloadTests {
    /// Operation-like objects: the members a patch knows, sometimes another, sometimes missing,
    /// with ops and pointers valid and not.
    static func randomOperation(_ rng: inout some RandomNumberGenerator) -> JSONValue {
        let ops: [JSONValue] = ["add", "remove", "replace", "move", "copy", "test", "Add", "nop", "", .int(1), .null]
        let pointers: [JSONValue] = ["", "/", "/a", "/a/b", "/~0~1", "/~2", "a", "/0", "/-", "/é/😀", "/users/g17/u17/score", .int(0)]
        var members: JSONObject = [:]
        if Int.random(in: 0..<12, using: &rng) > 0 {
            members["op"] = Int.random(in: 0..<4, using: &rng) > 0 ? ops[Int.random(in: 0..<6, using: &rng)] : ops.randomElement(using: &rng)!
        }
        if Int.random(in: 0..<12, using: &rng) > 0 {
            members["path"] = Int.random(in: 0..<4, using: &rng) > 0 ? pointers[Int.random(in: 0..<11, using: &rng)] : pointers.randomElement(using: &rng)!
        }
        if Bool.random(using: &rng) { members["from"] = pointers.randomElement(using: &rng)! }
        if Int.random(in: 0..<3, using: &rng) > 0 { members["value"] = JSONFixtures.randomValue(&rng, depth: 2) }
        if Int.random(in: 0..<8, using: &rng) == 0 {
            members[["extra", "op ", "Op", "välue", "\u{212A}"].randomElement(using: &rng)!] = .bool(true)
        }
        return Int.random(in: 0..<20, using: &rng) == 0 ? JSONFixtures.randomValue(&rng, depth: 2) : .object(members)
    }

    /// Whether the binary reader must take `payload`: an array of objects of only the members a
    /// patch knows, which the ordinary reader reads (with any `from` a valid pointer).
    static func isPlain(_ payload: JSONValue) -> Bool {
        guard case .array(let operations) = payload, (try? JSONPatch(payload)) != nil else { return false }
        return operations.allSatisfy { operation in
            guard case .object(let members) = operation else { return false }
            return members.allSatisfy { key, value in
                switch key {
                case "op", "path", "value": true
                case "from": if case .string(let text) = value { (try? JSONPointer(text)) != nil } else { false }
                default: false
                }
            }
        }
    }

    @Test func aPatchReadFromBinaryIsThePatchReadFromItsJSON() throws {
        var rng = JSONChangeRecorderTests.Random(state: 0x5EED_0001)
        var taken = 0
        for _ in 0..<6_000 {
            let payload = JSONValue.array((0..<Int.random(in: 0...3, using: &rng)).map { _ in Self.randomOperation(&rng) })
            let bytes = payload.binaryEncoded()
            let fast = bytes.withUnsafeBytes { JSONPatch(binary: $0) }
            let ordinary = try? JSONPatch(payload)
            if let fast {
                let ordinary = try #require(ordinary, "the binary reader took \(payload), which the ordinary reader refuses")
                #expect(fast.jsonValue.binaryEncoded() == ordinary.jsonValue.binaryEncoded(), "\(payload)")
                taken += 1
            }
            #expect((fast != nil) == Self.isPlain(payload), "\(payload)")
        }
        #expect(taken > 1_000)
    }

    @Test func aDamagedOrCutPatchIsLeftToTheOrdinaryReader() throws {
        var rng = JSONChangeRecorderTests.Random(state: 0x5EED_0002)
        for _ in 0..<400 {
            var payload: JSONValue
            repeat {
                payload = .array((0..<Int.random(in: 1...2, using: &rng)).map { _ in Self.randomOperation(&rng) })
            } while !Self.isPlain(payload)
            let bytes = payload.binaryEncoded()
            for cut in 0..<bytes.count {
                #expect(bytes[..<cut].withUnsafeBytes { JSONPatch(binary: $0) } == nil)
            }
            #expect((bytes + [0]).withUnsafeBytes { JSONPatch(binary: $0) } == nil)
            // One flipped bit: what the binary reader still takes, the ordinary one reads the same.
            var flipped = bytes
            flipped[Int.random(in: 0..<flipped.count, using: &rng)] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            if let fast = flipped.withUnsafeBytes({ JSONPatch(binary: $0) }) {
                let ordinary = try JSONPatch(JSONValue(binary: flipped))
                #expect(fast.jsonValue.binaryEncoded() == ordinary.jsonValue.binaryEncoded())
            }
        }
    }

    @Test func aPatchOfAnyOtherShapeIsLeftToTheOrdinaryReader() {
        let refused: [JSONValue] = [
            .null, .object([:]), "patch", .array([.int(1)]),
            [["op": "add", "path": "/a"]],  // no value
            [["op": "move", "path": "/a"]],  // no from
            [["op": "add", "path": "a", "value": 1]],  // no pointer
            [["op": "add", "path": "/~2", "value": 1]],
            [["op": "ADD", "path": "/a", "value": 1]],
            [["op": "add", "path": "/a", "value": 1, "note": "kept by RFC 6902, left to the ordinary reader"]],
            [["op": "add", "path": "/a", "value": 1, "from": 3]],
        ]
        for payload in refused {
            #expect(payload.binaryEncoded().withUnsafeBytes { JSONPatch(binary: $0) } == nil, "\(payload)")
        }
        let taken: [JSONValue] = [
            [], [["op": "add", "path": "", "value": .null]], [["op": "remove", "path": "/a/0", "value": 1]],
            [["from": "/b", "op": "copy", "path": "/a"], ["op": "test", "path": "/a", "value": ["x": [1, 2.5]]]],
            [["op": "replace", "path": "/users/g17/u17/score", "value": 12]],
        ]
        for payload in taken {
            let fast = payload.binaryEncoded().withUnsafeBytes { JSONPatch(binary: $0) }
            #expect(fast == (try? JSONPatch(payload)) && fast != nil, "\(payload)")
        }
    }

    @Test func aPathPayloadReadFromBinaryIsWhatItsJSONHolds() throws {
        var rng = JSONChangeRecorderTests.Random(state: 0x5EED_0003)
        var taken = 0
        for _ in 0..<6_000 {
            var members: JSONObject = [:]
            let pointers: [JSONValue] = ["", "/a", "/a~1b/0", "/~3", "x", .int(2)]
            if Int.random(in: 0..<8, using: &rng) > 0 { members["path"] = pointers.randomElement(using: &rng)! }
            for name in ["value", "by", "extra"] where Int.random(in: 0..<3, using: &rng) == 0 {
                members[name] = JSONFixtures.randomValue(&rng, depth: 2)
            }
            let payload = Int.random(in: 0..<20, using: &rng) == 0 ? JSONFixtures.randomValue(&rng, depth: 2) : .object(members)
            for name in ["value", "by"] as [StaticString] {
                let fast = payload.binaryEncoded().withUnsafeBytes { BinaryPathPayload(binary: $0, member: name) }
                let nameText = name.description
                var plain = false
                if case .object(let members) = payload, case .string(let text)? = members["path"], let path = try? JSONPointer(text),
                    members.allSatisfy({ $0.key == "path" || $0.key == nameText })
                {
                    plain = true
                    #expect(fast?.path == path)
                    #expect(fast?.member?.binaryEncoded() == members[nameText]?.binaryEncoded())
                }
                #expect((fast != nil) == plain, "\(payload)")
                if fast != nil { taken += 1 }
            }
        }
        #expect(taken > 500)
    }
}
