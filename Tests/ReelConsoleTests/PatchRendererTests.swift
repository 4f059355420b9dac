import ReelJSON
import Testing

@testable import ReelConsole

private func pointer(_ text: String) -> JSONPointer {
    do throws(JSONError) {
        return try JSONPointer(text)
    } catch {
        Issue.record("bad pointer in a test: \(text)")
        return .root
    }
}

@Suite struct PatchRendererTests {
    static let before: JSONValue = [
        "todos": [["title": "eggs"], ["title": "bread"]],
        "character": ["hp": 10, "name": "Ada"],
        "a": 1,
    ]

    static let patch = JSONPatch([
        .add(path: pointer("/todos/2"), value: ["title": "milk"]),
        .remove(path: pointer("/todos/0")),
        .replace(path: pointer("/character/hp"), value: -5),
        .move(from: pointer("/a"), path: pointer("/b")),
        .copy(from: pointer("/b"), path: pointer("/c")),
        .test(path: pointer("/character/name"), value: "Ada"),
    ])

    @Test func withTheDocumentBefore() {
        #expect(
            PatchRenderer().render(Self.patch, before: Self.before) == """
                + /todos/2  {"title":"milk"}
                - /todos/0  (was {"title":"eggs"})
                ~ /character/hp  10 → -5
                > /b moved from /a
                = /c copied from /b
                ? /character/name  test "Ada"

                """
        )
    }

    @Test func withoutTheDocumentBefore() {
        #expect(
            PatchRenderer().lines(for: Self.patch) == [
                #"+ /todos/2  {"title":"milk"}"#,
                "- /todos/0",
                "~ /character/hp  → -5",
                "> /b moved from /a",
                "= /c copied from /b",
                #"? /character/name  test "Ada""#,
            ]
        )
    }

    @Test func colorPerKindOfChange() {
        #expect(
            PatchRenderer(styler: .ansi).lines(for: Self.patch, before: Self.before) == [
                "\u{1B}[32m+ /todos/2  {\"title\":\"milk\"}\u{1B}[0m",
                "\u{1B}[31m- /todos/0  (was {\"title\":\"eggs\"})\u{1B}[0m",
                "\u{1B}[33m~ /character/hp  10 → -5\u{1B}[0m",
                "\u{1B}[36m> /b moved from /a\u{1B}[0m",
                "\u{1B}[36m= /c copied from /b\u{1B}[0m",
                "\u{1B}[2m? /character/name  test \"Ada\"\u{1B}[0m",
            ]
        )
    }

    @Test func oldValuesFollowEarlierOperations() {
        // Removing /todos/0 twice removes "eggs", then "bread" (which moved up to index 0).
        let patch = JSONPatch([.remove(path: pointer("/todos/0")), .remove(path: pointer("/todos/0"))])
        #expect(
            PatchRenderer().lines(for: patch, before: Self.before) == [
                #"- /todos/0  (was {"title":"eggs"})"#,
                #"- /todos/0  (was {"title":"bread"})"#,
            ]
        )
    }

    @Test func anAddOverAMemberIsShownAsAReplacement() {
        let patch = JSONPatch([
            .add(path: pointer("/character/hp"), value: 3),
            .add(path: pointer("/todos/0"), value: "first"),  // in an array: an insertion
            .add(path: .root, value: [:]),
        ])
        #expect(
            PatchRenderer(valueWidth: 200).lines(for: patch, before: Self.before) == [
                "~ /character/hp  10 → 3",
                #"+ /todos/0  "first""#,
                #"~ (root)  {"a":1,"character":{"hp":3,"name":"Ada"},"todos":["first",{"title":"eggs"},{"title":"bread"}]} → {}"#,
            ]
        )
    }

    @Test func longValuesAreAbbreviated() {
        let patch = JSONPatch([.replace(path: pointer("/todos"), value: .string(String(repeating: "x", count: 30)))])
        #expect(
            PatchRenderer(valueWidth: 12).lines(for: patch, before: Self.before) == [
                #"~ /todos  [{"title":"… → "xxxxxxxxxx…"#
            ]
        )
    }

    @Test func aPatchThatDoesNotApplyStopsShowingOldValues() {
        let patch = JSONPatch([
            .remove(path: pointer("/nothing")),
            .remove(path: pointer("/a")),
        ])
        #expect(PatchRenderer().lines(for: patch, before: Self.before) == ["- /nothing", "- /a"])
    }

    @Test func pathsAreShownSafely() {
        let patch = JSONPatch([
            .add(path: JSONPointer(tokens: ["line\nbreak", "a/b"]), value: true),
            .remove(path: .root),
        ])
        #expect(PatchRenderer().lines(for: patch) == [#"+ /line\nbreak/a~1b  true"#, "- (root)"])
    }

    @Test func anEmptyPatchRendersNothing() {
        #expect(PatchRenderer().render(JSONPatch([]), before: Self.before) == "")
    }
}
