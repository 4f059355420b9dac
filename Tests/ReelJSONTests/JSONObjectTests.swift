import ReelJSON
import Testing

/// A `JSONObject` answers as a `Dictionary` of the same edits would, below and past the count from
/// which it keeps an index of its keys, and encodes in canonical order whatever order its members
/// came in.
@Suite struct JSONObjectTests {
    /// SplitMix64: the same edits for the same seed.
    typealias Random = JSONChangeRecorderTests.Random

    /// Keys from a pool of 40 grow objects past the index's threshold and shrink them below it; of
    /// 400, to hundreds of members (the table grows, and removals shift its probe runs back).
    /// Canonically equivalent spellings are in the pool: one key, as in a `Dictionary`.
    @Test(arguments: [(1, 40), (2, 40), (3, 40), (4, 40), (5, 400), (6, 400)] as [(UInt64, Int)])
    func randomEditsAnswerAsADictionary(seed: UInt64, poolSize: Int) {
        var random = Random(state: seed)
        var object = JSONObject()
        var model: [String: JSONValue] = [:]
        let pool = (0..<poolSize).map { "key\($0)" } + ["", "é", "a/b", "~", String(repeating: "long", count: 10)]
            + ["K", "\u{212A}", "\u{E9}", "e\u{301}", "日本", "a;", "a\u{37E}"]
        for step in 0..<(poolSize * 100) {
            let key = pool.randomElement(using: &random)!
            let value = JSONValue.int(Int64(step))
            switch random.next() % 5 {
            case 0:
                #expect(object.removeValue(forKey: key) == model.removeValue(forKey: key))
            case 1:
                object[key] = nil
                model[key] = nil
            case 2:
                if let index = object.index(forKey: key) {
                    object[valueAt: index] = value
                    model[key] = value
                } else {
                    #expect(model[key] == nil)
                }
            default:
                #expect(object.updateValue(value, forKey: key) == model.updateValue(value, forKey: key))
            }
            #expect(object.count == model.count)
            #expect(object[key] == model[key])
        }
        for key in pool { #expect(object[key] == model[key]) }
        #expect(object.dictionary == model)
        #expect(Set(object.keys) == Set(model.keys))
        #expect(object == JSONObject(model), "equal whatever the members' order")
    }

    @Test func canonicallyEquivalentKeysAreOneKeyAsInADictionary() {
        // U+212A KELVIN SIGN is canonically equivalent to "K"; "é" precomposed to "e" + U+0301.
        var object: JSONObject = ["K": 1, "\u{E9}": 2]
        var model: [String: JSONValue] = ["K": 1, "\u{E9}": 2]
        object["\u{212A}"] = 3
        model["\u{212A}"] = 3
        object["e\u{301}"] = 4
        model["e\u{301}"] = 4
        #expect(object.count == model.count)
        #expect(object.dictionary == model)

        // The same past the count from which keys are found through a table.
        var large = JSONObject(uniqueKeysWithValues: (0..<20).map { ("filler\($0)", JSONValue.int(0)) })
        var largeModel = large.dictionary
        for (key, value) in [("K", 1), ("\u{E9}", 2), ("\u{212A}", 3), ("e\u{301}", 4), ("a\u{37E}", 5), ("a;", 6)] as [(String, JSONValue)] {
            #expect(large.updateValue(value, forKey: key) == largeModel.updateValue(value, forKey: key))
        }
        #expect(large.count == 23 && large.dictionary == largeModel)
        #expect(large.removeValue(forKey: "K") == 3 && large["\u{212A}"] == nil)
    }

    @Test func encodesInCanonicalOrderWhateverTheOrderOfItsMembers() throws {
        for count in [0, 1, 2, 5, 12, 13, 16, 17, 40] {
            let keys = (0..<count).map { "k\(String($0, radix: 7))" }
            let forward = JSONObject(uniqueKeysWithValues: keys.map { ($0, JSONValue.int(1)) })
            let backward = JSONObject(uniqueKeysWithValues: keys.reversed().map { ($0, JSONValue.int(1)) })
            let text = JSONValue.object(forward).jsonString
            #expect(JSONValue.object(backward).jsonString == text)
            let sorted = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(text == "{" + sorted.map { "\"\($0)\":1" }.joined(separator: ",") + "}")
            var writer = BinaryWriter()
            writer.writeJSON(.object(backward))
            #expect(try JSONValue(binary: writer.bytes) == .object(forward))
        }
    }

    @Test func literalsKeepTheLastValueOfARepeatedKey() {
        let object: JSONObject = ["a": 1, "b": 2, "a": 3]
        #expect(object.count == 2 && object["a"] == 3)
    }
}

extension JSONObjectTests {
    /// Stored objects are read without a lookup per key while their keys come in canonical order;
    /// a repeated key is damage however the keys before it came, also a key canonically
    /// equivalent to an earlier one of other bytes.
    @Test func aRepeatedKeyInStoredBinaryIsDamage() {
        func object(_ keys: [String]) -> [UInt8] {
            var writer = BinaryWriter()
            writer.writeUInt8(0x07)
            writer.writeVarint(UInt64(keys.count))
            for key in keys {
                writer.writeString(key)
                writer.writeUInt8(0x00)
            }
            return writer.bytes
        }
        #expect(throws: JSONError.self) { try JSONValue(binary: object(["a", "b", "a"])) }
        #expect(throws: JSONError.self) { try JSONValue(binary: object(["b", "a", "b"])) }
        #expect(throws: JSONError.self) { try JSONValue(binary: object(["K", "\u{212A}"])) }
        #expect(throws: JSONError.self) { try JSONValue(binary: object(["a", "e\u{301}", "\u{E9}"])) }
        #expect((try? JSONValue(binary: object(["a", "b", "c"])))?.objectValue?.count == 3)
        #expect((try? JSONValue(binary: object(["c", "a", "b"])))?.objectValue?.count == 3)
    }
}

extension JSONObjectTests {
    /// Objects sharing their storage are equal without their members being compared (what lets a
    /// diff or the change recorder skip an unchanged subtree of a large state): a member no value
    /// equals, a NaN, shows which way the answer came.
    @Test func objectsSharingStorageAreEqualAtOnce() {
        let object: JSONObject = ["x": .double(.nan), "y": 1]
        let copy = object
        #expect(copy == object, "the same storage")
        #expect(JSONObject(object.dictionary) != object, "storage of its own: NaN is not equal to itself")
        var edited = object
        edited["y"] = 2
        #expect(edited != object)
        #expect(JSONValue.object(["a": .object(object)]) == JSONValue.object(["a": .object(copy)]), "a shared subtree inside new parents")
    }
}
