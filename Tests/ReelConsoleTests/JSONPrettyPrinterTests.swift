import ReelJSON
import Testing

@testable import ReelConsole

/// `text` without ANSI SGR sequences (`ESC [ … m`).
func strippingEscapes(_ text: String) -> String {
    var result = ""
    var scalars = text.unicodeScalars.makeIterator()
    while let scalar = scalars.next() {
        guard scalar == "\u{1B}" else {
            result.unicodeScalars.append(scalar)
            continue
        }
        while let next = scalars.next(), next != "m" {}
    }
    return result
}

@Suite struct JSONPrettyPrinterTests {
    static let document: JSONValue = [
        "name": "Ada", "hp": 10, "ratio": 0.5, "tags": ["a", .null], "ok": true, "none": .null, "empty": [:],
        "nested": ["list": [], "off": false],
    ]

    static let plain = """
        {
          "empty": {},
          "hp": 10,
          "name": "Ada",
          "nested": {
            "list": [],
            "off": false
          },
          "none": null,
          "ok": true,
          "ratio": 0.5,
          "tags": [
            "a",
            null
          ]
        }
        """

    @Test func plainOutputIsPrettyPrintedJSON() throws {
        let text = JSONPrettyPrinter().format(Self.document)
        #expect(text == Self.plain)
        #expect(text == Self.document.prettyPrinted())
        #expect(try JSONValue(parsing: text) == Self.document)
    }

    @Test func colorMarksKeysStringsNumbersAndLiterals() {
        let text = JSONPrettyPrinter(styler: .ansi).format(["name": "Ada", "hp": -5, "ok": true, "gone": .null, "xs": [1.5]])
        let key = { (name: String) in "\u{1B}[1;34m\"\(name)\"\u{1B}[0m" }
        #expect(
            text == """
                {
                  \(key("gone")): \u{1B}[35mnull\u{1B}[0m,
                  \(key("hp")): \u{1B}[36m-5\u{1B}[0m,
                  \(key("name")): \u{1B}[32m"Ada"\u{1B}[0m,
                  \(key("ok")): \u{1B}[35mtrue\u{1B}[0m,
                  \(key("xs")): [
                    \u{1B}[36m1.5\u{1B}[0m
                  ]
                }
                """
        )
    }

    @Test func colorOnlyAddsEscapes() {
        #expect(strippingEscapes(JSONPrettyPrinter(styler: .ansi).format(Self.document)) == Self.plain)
        #expect(strippingEscapes(JSONPrettyPrinter(styler: .ansi, indent: 4).format(Self.document)) == Self.document.prettyPrinted(indent: 4))
    }

    @Test func scalarsAndEmptyContainersAtTheTop() {
        let printer = JSONPrettyPrinter(styler: .ansi)
        #expect(printer.format(42) == "\u{1B}[36m42\u{1B}[0m")
        #expect(printer.format([]) == "[]")
        #expect(printer.format([:]) == "{}")
        #expect(JSONPrettyPrinter().format("x") == #""x""#)
    }

    @Test func keysSortByBytesAsPrettyPrintedDoes() {
        // "Z" < "a" < "é" in UTF-8 bytes.
        let value: JSONValue = ["é": 1, "a": 2, "Z": 3]
        #expect(strippingEscapes(JSONPrettyPrinter(styler: .ansi).format(value)) == value.prettyPrinted())
    }

    @Test func controlCharactersInDataStayEscaped() {
        let value: JSONValue = ["k\u{1B}": "\u{1B}[2J\n"]
        let text = JSONPrettyPrinter(styler: .ansi, theme: JSONTheme(key: [], string: [], number: [], literal: [])).format(value)
        #expect(text == "{\n  \"k\\u001b\": \"\\u001b[2J\\n\"\n}")
    }

    @Test func aThemeChangesTheStyles() {
        let theme = JSONTheme(key: .yellow, string: [], number: .bold, literal: .dim)
        #expect(
            JSONPrettyPrinter(styler: .ansi, theme: theme, indent: 0).format(["a": [1, "s", false]]) == """
                {
                \u{1B}[33m"a"\u{1B}[0m: [
                \u{1B}[1m1\u{1B}[0m,
                "s",
                \u{1B}[2mfalse\u{1B}[0m
                ]
                }
                """
        )
    }
}
