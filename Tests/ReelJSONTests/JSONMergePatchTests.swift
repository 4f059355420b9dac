import Testing

@testable import ReelJSON

private func parse(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

@Suite struct JSONMergePatchTests {
    /// RFC 7396 appendix A, the whole table: original, patch, result.
    static let appendixA: [(original: String, patch: String, result: String)] = [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ]

    @Test(arguments: appendixA)
    func rfc7396AppendixA(original: String, patch: String, result: String) throws {
        var target = try parse(original)
        JSONMergePatch.apply(try parse(patch), to: &target)
        #expect(target == (try parse(result)))
    }

    @Test func rfc7396Section3Example() throws {
        var target = try parse(#"""
            {
              "title": "Goodbye!",
              "author" : {
                "givenName" : "John",
                "familyName" : "Doe"
              },
              "tags":[ "example", "sample" ],
              "content": "This will be unchanged"
            }
            """#)
        let patch = try parse(#"""
            {
              "title": "Hello!",
              "phoneNumber": "+01-123-456-7890",
              "author": {
                "familyName": null
              },
              "tags": [ "example" ]
            }
            """#)
        JSONMergePatch.apply(patch, to: &target)
        #expect(target == (try parse(#"""
            {
              "title": "Hello!",
              "author" : {
                "givenName" : "John"
              },
              "tags": [ "example" ],
              "content": "This will be unchanged",
              "phoneNumber": "+01-123-456-7890"
            }
            """#)))
    }

    @Test func nullsInsideNewMembersAreDropped() throws {
        var target = try parse(#"{"keep": 1}"#)
        JSONMergePatch.apply(try parse(#"{"new": {"a": null, "b": {"c": null, "d": [null]}}}"#), to: &target)
        // Nulls inside arrays are values, not deletions: arrays are copied as they are.
        #expect(target == (try parse(#"{"keep": 1, "new": {"b": {"d": [null]}}}"#)))
    }

    @Test func mergingLeavesCopiesAlone() throws {
        var target = try parse(#"{"a": {"b": 1, "c": 2}, "d": [1]}"#)
        let snapshot = target
        JSONMergePatch.apply(try parse(#"{"a": {"b": null, "e": 3}, "d": null}"#), to: &target)
        #expect(target == (try parse(#"{"a": {"c": 2, "e": 3}}"#)))
        #expect(snapshot == (try parse(#"{"a": {"b": 1, "c": 2}, "d": [1]}"#)))
    }
}
