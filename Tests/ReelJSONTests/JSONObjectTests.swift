import ReelJSON
import Testing

/// A `JSONObject` answers as a `Dictionary` of the same edits would, below and past the count from
/// which it keeps an index of its keys, and encodes in canonical order whatever order its members
/// came in.
@Suite struct JSONObjectTests {
    /// SplitMix64: the same edits for the same seed.
    typealias Random = JSONChangeRecorderTests.Random

    @Test(arguments: [1, 2, 3, 4]) func randomEditsAnswerAsADictionary(seed: UInt64) {
        var random = Random(state: seed)
        var object = JSONObject()
        var model: [String: JSONValue] = [:]
        // Keys from a pool of 40: objects grow past the index's threshold and shrink below it.
        let pool = (0..<40).map { "key\($0)" } + ["", "é", "a/b", "~", String(repeating: "long", count: 10)]
        for step in 0..<4_000 {
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
