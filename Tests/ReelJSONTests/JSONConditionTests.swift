import PropertyBased
import Testing

@testable import ReelJSON

private func condition(_ text: String) throws(JSONConditionError) -> JSONCondition {
    try JSONCondition(parsing: text)
}

/// Parses `text`, expecting an error, and returns it.
private func parseError(_ text: String) -> JSONConditionError? {
    do throws(JSONConditionError) {
        let parsed = try JSONCondition(parsing: text)
        Issue.record("expected an error, parsed \(parsed)")
        return nil
    } catch {
        return error
    }
}

private func pointer(_ text: String) throws -> JSONPointer {
    try JSONPointer(text)
}

@Suite struct JSONConditionParsingTests {
    @Test(arguments: JSONCondition.Operator.allCases)
    func everyOperator(op: JSONCondition.Operator) throws {
        let parsed = try condition("/character/hp \(op.rawValue) 0")
        #expect(parsed == JSONCondition(pointer: try pointer("/character/hp"), predicate: .comparison(op, 0)))
        // No whitespace needed: a bare pointer ends at an operator character.
        #expect(try condition("/character/hp\(op.rawValue)0") == parsed)
    }

    static let values: [(text: String, value: JSONValue)] = [
        ("0", .int(0)),
        ("-5", .int(-5)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(0x1p63)),
        ("2.5", .double(2.5)),
        ("-1e3", .double(-1000)),
        (#""done""#, "done"),
        (#""a \"q\" \u00e9 😀""#, "a \"q\" é 😀"),
        (#""""#, ""),
        ("true", true),
        ("false", false),
        ("null", .null),
        (#"["a","b"]"#, ["a", "b"]),
        ("[ ]", []),
        (#"{"x": [1, {"y": null}]}"#, ["x": [1, ["y": .null]]]),
        ("{}", [:]),
    ]

    @Test(arguments: values)
    func everyValueKind(text: String, value: JSONValue) throws {
        let parsed = try condition("/v == \(text)")
        guard case .comparison(.equal, let parsedValue) = parsed.predicate else {
            Issue.record("not an equality: \(parsed)")
            return
        }
        #expect(JSONFixtures.identical(parsedValue, value))
    }

    @Test func existsAndMissing() throws {
        let todo = try pointer("/todos/3")
        #expect(try condition("exists /todos/3") == JSONCondition(pointer: todo, predicate: .exists))
        #expect(try condition("missing /todos/3") == JSONCondition(pointer: todo, predicate: .missing))
        #expect(try condition("exists/todos/3") == JSONCondition(pointer: todo, predicate: .exists))
        #expect(try condition("\tmissing \n /todos/3 \r\n") == JSONCondition(pointer: todo, predicate: .missing))
        #expect(try condition(#"exists """#) == JSONCondition(pointer: .root, predicate: .exists))
        #expect(try condition(#"missing"/a b""#) == JSONCondition(pointer: JSONPointer(tokens: ["a b"]), predicate: .missing))
        // Keywords are words: a pointer may be named like one.
        #expect(try condition("/exists == 1").pointer == JSONPointer(tokens: ["exists"]))
    }

    @Test func whitespaceIsFreeAroundTokens() throws {
        let expected = JSONCondition(pointer: try pointer("/a"), predicate: .comparison(.lessOrEqual, [1, 2]))
        for text in ["/a<=[1,2]", "  /a <= [1,2]  ", "/a\t<=\n[ 1 ,\r\n 2 ]", "\n/a<=  [1,2]\n"] {
            #expect(try condition(text) == expected, "\(text)")
        }
    }

    @Test func pointerEscapes() throws {
        #expect(try condition("/a~1b/m~0n == 1").pointer.tokens == ["a/b", "m~n"])
        #expect(try condition("/~01 == 1").pointer.tokens == ["~1"])
        #expect(try condition("/ == 1").pointer.tokens == [""])
        #expect(try condition("/todos/0/é == 1").pointer.tokens == ["todos", "0", "é"])
        // Quotes inside a bare pointer are just characters.
        #expect(try condition(#"/k"l == 1"#).pointer.tokens == [#"k"l"#])
    }

    @Test func quotedPointers() throws {
        #expect(try condition(#""" == {}"#).pointer == .root)
        #expect(try condition(#""/first name" != "Ada""#).pointer.tokens == ["first name"])
        #expect(try condition(#""/a=b"=="x""#).pointer.tokens == ["a=b"])
        #expect(try condition(#""/<>!" < 3"#).pointer.tokens == ["<>!"])
        // JSON escapes are undone first, then pointer escapes.
        #expect(try condition(#""/caf\u00e9/a~1b/\"q\"" == 1"#).pointer.tokens == ["café", "a/b", "\"q\""])
        #expect(try condition(#""/x\/y" == 1"#).pointer.tokens == ["x", "y"])
    }

    static let errors: [(text: String, column: Int, code: JSONConditionError.Code, message: String)] = [
        ("", 1, .syntax, "expected a condition such as '/path == 1', 'exists /path' or 'missing /path', found end of input"),
        ("   ", 4, .syntax, "expected a condition such as '/path == 1', 'exists /path' or 'missing /path', found end of input"),
        (
            "character/hp <= 0", 1, .syntax,
            #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found 'character/hp'; did you mean '/character/hp'?"#
        ),
        (
            "exist /a", 1, .syntax,
            #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found 'exist'; did you mean 'exists'?"#
        ),
        (
            "MISSING /a", 1, .syntax,
            #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found 'MISSING'; did you mean 'missing'?"#
        ),
        (
            "misc/x < 1", 1, .syntax,
            #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found 'misc/x'; did you mean '/misc/x'?"#
        ),
        (
            ".character.hp < 1", 1, .syntax,
            #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found '.character.hp'"#
        ),
        ("== 1", 1, .syntax, #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document), 'exists' or 'missing', found '=='"#),
        ("exists", 7, .syntax, #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document) after 'exists', found end of input"#),
        ("missing hp", 9, .syntax, #"expected a JSON Pointer ('/' then keys, or quoted: "" is the whole document) after 'missing', found 'hp'"#),
        ("exists /a == 1", 11, .syntax, "expected the end of the condition after the pointer, found '=='; 'exists' takes only a pointer"),
        ("/a", 3, .syntax, "expected a comparison operator (==, !=, <, <=, >, >=) after the pointer, found end of input"),
        ("/a = 1", 4, .syntax, "expected a comparison operator (==, !=, <, <=, >, >=), found '='; write '==' to test equality"),
        ("/a eq 1", 4, .syntax, "expected a comparison operator (==, !=, <, <=, >, >=), found 'eq'"),
        ("/a ! 1", 4, .syntax, "expected a comparison operator (==, !=, <, <=, >, >=), found '!'"),
        ("/a ==", 6, .syntax, "expected a JSON value after '==', found end of input"),
        ("/a >=   ", 9, .syntax, "expected a JSON value after '>=', found end of input"),
        (#"/status == done"#, 12, .syntax, #"expected a JSON value, found 'done'; strings need double quotes, as in "done""#),
        (#"/status == 'done'"#, 12, .syntax, #"expected a JSON value, found ''done''; strings need double quotes, as in "done""#),
        (#"/ok == True"#, 8, .syntax, "expected a JSON value, found 'True'; did you mean 'true'?"),
        (#"/ok == NULL"#, 8, .syntax, "expected a JSON value, found 'NULL'; did you mean 'null'?"),
        ("/a <> 1", 5, .invalidValue, "expected a JSON value, found '>'"),
        ("/a == 1 2", 9, .invalidValue, "unexpected '2' after the JSON value"),
        (#"/tags == ["a",]"#, 14, .invalidValue, "trailing comma before ']'"),
        ("/a == [1, 2", 12, .invalidValue, "expected ',' or ']' after array element, found end of input"),
        ("/a == tru", 7, .syntax, "expected a JSON value, found 'tru'; did you mean 'true'?"),
        ("/a == [tru]", 8, .invalidValue, "invalid literal; expected 'true'"),
        ("/a >= 1e999", 7, .invalidValue, "number 1e999 is out of range"),
        ("/a~2 == 1", 3, .invalidPointer, "expected '0' or '1' after '~' in the pointer ('~0' stands for '~', '~1' for '/')"),
        ("/ok/a~ == 1", 6, .invalidPointer, "expected '0' or '1' after '~' in the pointer ('~0' stands for '~', '~1' for '/')"),
        (#""/a == 1"#, 9, .syntax, #"expected '"' to end the quoted pointer that starts at column 1, found end of input"#),
        (#""abc" == 1"#, 1, .invalidPointer, #"expected a JSON Pointer ("" or starting with '/'), found "abc""#),
        (#""/a~x" == 1"#, 1, .invalidPointer, #"JSON Pointer "/a~x" has an invalid escape: '~' must be followed by '0' or '1'"#),
        (#""/a\x" == 1"#, 4, .invalidPointer, #"invalid escape sequence '\x'"#),
        // Columns count characters, not bytes or scalars: "é" is two bytes, "e\u{301}" two scalars.
        ("/é == x", 7, .syntax, #"expected a JSON value, found 'x'; strings need double quotes, as in "x""#),
        ("/e\u{301} = 1", 4, .syntax, "expected a comparison operator (==, !=, <, <=, >, >=), found '='; write '==' to test equality"),
        ("/日本 == [1,", 11, .invalidValue, "expected a JSON value, found end of input"),
    ]

    @Test(arguments: errors)
    func errorsNameTheColumnAndWhatWasExpected(text: String, column: Int, code: JSONConditionError.Code, message: String) {
        guard let error = parseError(text) else { return }
        #expect(error.message == message)
        #expect(error.column == column)
        #expect(error.code == code)
        #expect(error.description == "column \(column): \(message)")
    }

    @Test func errorsKeepTheUnderlyingJSONError() {
        #expect(parseError("/a == [1,")?.underlying?.code == .syntax)
        #expect(parseError(#""abc" == 1"#)?.underlying?.code == .invalidPointer)
        #expect(parseError("/a = 1")?.underlying == nil)
    }

    @Test func descriptionQuotesThePointerOnlyWhenItMust() throws {
        let cases: [(JSONCondition, String)] = [
            (JSONCondition(pointer: try pointer("/character/hp"), predicate: .comparison(.lessOrEqual, 0)), "/character/hp <= 0"),
            (JSONCondition(pointer: try pointer("/todos/3"), predicate: .exists), "exists /todos/3"),
            (JSONCondition(pointer: try pointer("/session"), predicate: .missing), "missing /session"),
            (JSONCondition(pointer: .root, predicate: .comparison(.equal, [:])), #""" == {}"#),
            (JSONCondition(pointer: JSONPointer(tokens: ["a b", "x=y"]), predicate: .exists), #"exists "/a b/x=y""#),
            (JSONCondition(pointer: JSONPointer(tokens: ["a/b", "~"]), predicate: .comparison(.notEqual, "v")), #"/a~1b/~0 != "v""#),
            (JSONCondition(pointer: JSONPointer(tokens: ["line\nbreak"]), predicate: .missing), #"missing "/line\nbreak""#),
            (JSONCondition(pointer: try pointer("/t"), predicate: .comparison(.equal, ["b": 1, "a": [true, .null]])), #"/t == {"a":[true,null],"b":1}"#),
        ]
        for (parsed, text) in cases {
            #expect(parsed.description == text)
            #expect(try condition(text) == parsed)
        }
    }

    @Test func descriptionParsesBackToAnEqualCondition() async {
        let conditions = Generator<JSONCondition, Shrink.None<JSONCondition>> { rng in
            var tokens: [String] = []
            for _ in 0..<Int.random(in: 0...3, using: &rng) { tokens.append(JSONFixtures.randomString(&rng)) }
            let predicate: JSONCondition.Predicate =
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: .exists
                case 1: .missing
                default:
                    .comparison(
                        JSONCondition.Operator.allCases.randomElement(using: &rng) ?? .equal,
                        JSONFixtures.randomValue(&rng, depth: 2)
                    )
                }
            return JSONCondition(pointer: JSONPointer(tokens: tokens), predicate: predicate)
        }
        await propertyCheck(count: 500, input: conditions) { parsed throws in
            #expect(try JSONCondition(parsing: parsed.description) == parsed)
        }
    }
}

@Suite struct JSONConditionEvaluationTests {
    static let document: JSONValue = [
        "character": ["hp": -5, "name": "Ada", "tags": ["a", "b"]],
        "todos": [["title": "milk"], ["title": "eggs"]],
        "session": .null,
        "status": "done",
    ]

    @Test func existsAndMissingLookAtPresenceOnly() throws {
        for (text, holds) in [
            ("exists /todos/1", true), ("exists /todos/2", false), ("missing /todos/2", true),
            ("exists /session", true), ("missing /session", false),  // null is a value
            ("exists /status/0", false), ("missing /character/hp/x", true),  // a step into a scalar
            ("exists /todos/01", false), ("exists /todos/-", false), (#"exists """#, true),
        ] {
            #expect(try condition(text).holds(in: Self.document) == holds, "\(text)")
        }
    }

    @Test func comparisonsInADocument() throws {
        for (text, holds) in [
            ("/character/hp <= 0", true), ("/character/hp < -5", false), ("/character/hp >= -5.0", true),
            (#"/status == "done""#, true), (#"/status != "done""#, false), (#"/character/name > "Ad""#, true),
            (#"/character/tags == ["a","b"]"#, true), (#"/character/tags == ["b","a"]"#, false),
            (#"/todos/1 == {"title": "eggs"}"#, true), ("/session == null", true), ("/session != 0", true),
        ] {
            #expect(try condition(text).holds(in: Self.document) == holds, "\(text)")
        }
    }

    @Test func nothingAtThePointerMakesEveryComparisonFalse() throws {
        for op in JSONCondition.Operator.allCases {
            let text = "/character/mp \(op.rawValue) 1"
            #expect(try condition(text).holds(in: Self.document) == false, "\(text)")
            #expect(try condition(text).holds(forValueAtPointer: nil) == false, "\(text)")
        }
        // `!=` included: absence is asked with `missing`.
        #expect(try condition("/session/x != null").holds(in: Self.document) == false)
        #expect(try condition("missing /session/x").holds(in: Self.document))
    }

    @Test func holdsForTheSliceAlone() throws {
        let hp = try condition("/character/hp <= 0")
        #expect(hp.holds(forValueAtPointer: .int(0)))
        #expect(!hp.holds(forValueAtPointer: .int(1)))
        #expect(!hp.holds(forValueAtPointer: Optional<JSONValue>.none))
        #expect(try condition("exists /x").holds(forValueAtPointer: .null))
        #expect(try condition("missing /x").holds(forValueAtPointer: Optional<JSONValue>.none))
    }

    /// (actual, expected, how `actual` compares with `expected`: -1, 0, 1)
    static let numberOrders: [(JSONValue, JSONValue, Int)] = [
        (.int(9_007_199_254_740_993), .double(9_007_199_254_740_992.0), 1),  // 2^53 + 1 vs 2^53
        (.int(9_007_199_254_740_992), .double(9_007_199_254_740_992.0), 0),
        (.int(9_007_199_254_740_991), .double(9_007_199_254_740_992.0), -1),
        (.double(9_007_199_254_740_992.0), .int(9_007_199_254_740_993), -1),
        (.int(.max), .double(0x1p63), -1),  // 9223372036854775807.0 is 2^63 as a double
        (.int(.min), .double(-0x1p63), 0),
        (.int(.min), .double((-0x1p63).nextUp), -1),
        (.int(.min), .double((-0x1p63).nextDown), 1),
        (.int(.max), .double(.infinity), -1),
        (.int(.min), .double(-.infinity), 1),
        (.int(1), .double(1.5), -1),
        (.int(2), .double(1.5), 1),
        (.int(1), .double(1.0), 0),
        (.int(-1), .double(-1.5), 1),
        (.int(-2), .double(-1.5), -1),
        (.int(0), .double(-0.0), 0),
        (.int(0), .double(.leastNonzeroMagnitude), -1),
        (.int(0), .double(-.leastNonzeroMagnitude), 1),
        (.double(2.5), .int(2), 1),
        (.double(-0.0), .double(0.0), 0),
        (.int(-3), .int(7), -1),
        (.double(1e300), .double(1e299), 1),
    ]

    @Test(arguments: numberOrders)
    func numbersCompareExactly(actual: JSONValue, expected: JSONValue, order: Int) {
        Self.expectOrder(actual, expected, order)
    }

    /// (actual, expected, order) for strings: Unicode scalar order, after `==`.
    static let stringOrders: [(String, String, Int)] = [
        ("Z", "a", -1), ("a", "ab", -1), ("", "a", -1), ("é", "z", 1), ("b", "a", 1), ("same", "same", 0),
        ("\u{E9}", "e\u{301}", 0),  // canonically equivalent: equal, as `==` says
        ("😀", "\u{FFFF}", 1),  // by scalar (UTF-8 byte) order, not UTF-16 order
        ("10", "9", -1),  // strings are not numbers
    ]

    @Test(arguments: stringOrders)
    func stringsCompareByScalars(actual: String, expected: String, order: Int) {
        Self.expectOrder(.string(actual), .string(expected), order)
    }

    static func expectOrder(_ actual: JSONValue, _ expected: JSONValue, _ order: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let results: [JSONCondition.Operator: Bool] = [
            .less: order < 0, .lessOrEqual: order <= 0, .equal: order == 0,
            .notEqual: order != 0, .greaterOrEqual: order >= 0, .greater: order > 0,
        ]
        for (op, result) in results {
            let condition = JSONCondition(pointer: .root, predicate: .comparison(op, expected))
            #expect(condition.holds(in: actual) == result, "\(actual) \(op.rawValue) \(expected)", sourceLocation: sourceLocation)
        }
    }

    static let unordered: [(JSONValue, JSONValue, equal: Bool)] = [
        (.int(1), .string("1"), false),
        (.string("a"), .null, false),
        (.bool(true), .bool(true), true),
        (.bool(false), .bool(true), false),
        (.null, .null, true),
        ([1, 2], [1, 2.0], true),
        ([1, 2], [2, 1], false),
        ([1], [1, 1], false),
        (["a": 1, "b": ["c": .null]], ["b": ["c": .null], "a": 1.0], true),
        (["a": 1], ["a": 1, "b": 2], false),
        ([:], [], false),
        (.double(.nan), .double(.nan), false),
        (.double(.nan), .int(0), false),
    ]

    @Test(arguments: unordered)
    func otherPairsAreOnlyEqualOrNot(actual: JSONValue, expected: JSONValue, equal: Bool) {
        for op in JSONCondition.Operator.allCases {
            let condition = JSONCondition(pointer: .root, predicate: .comparison(op, expected))
            let result =
                switch op {
                case .equal: equal
                case .notEqual: !equal
                default: false  // even for equal booleans, nulls, arrays and objects
                }
            #expect(condition.holds(in: actual) == result, "\(actual) \(op.rawValue) \(expected)")
        }
    }

    /// Exactly one of `<`, `==`, `>` holds for two numbers or two strings; `<=` is `<` or `==`.
    @Test func orderIsConsistentWithEquality() async {
        let pairs = Generator<(JSONValue, JSONValue), Shrink.None<(JSONValue, JSONValue)>> { rng in
            func scalar() -> JSONValue {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: .int(JSONFixtures.randomInt(&rng))
                case 1: .double(JSONFixtures.randomDouble(&rng))
                // Small integers as doubles, so that equal values across the two cases come up.
                case 2: .double(Double(Int.random(in: -3...3, using: &rng)))
                default: .string(JSONFixtures.randomString(&rng))
                }
            }
            return (scalar(), scalar())
        }
        await propertyCheck(count: 1000, input: pairs) { actual, expected in
            func holds(_ op: JSONCondition.Operator) -> Bool {
                JSONCondition(pointer: .root, predicate: .comparison(op, expected)).holds(in: actual)
            }
            let ordered = actual.typeName == expected.typeName
            let outcomes = [holds(.less), holds(.equal), holds(.greater)].filter { $0 }.count
            #expect(outcomes == (ordered ? 1 : (holds(.equal) ? 1 : 0)))
            #expect(holds(.equal) == (actual == expected))
            #expect(holds(.notEqual) == (actual != expected))
            #expect(holds(.lessOrEqual) == (holds(.less) || (ordered && holds(.equal))))
            #expect(holds(.greaterOrEqual) == (holds(.greater) || (ordered && holds(.equal))))
        }
    }

    #if arch(x86_64)
    /// Against a reference that needs no cleverness: `Float80` holds every `Int64` and every
    /// `Double` exactly.
    @Test func intAgainstDoubleMatchesExactArithmetic() async {
        let pairs = Generator<(Int64, Double), Shrink.None<(Int64, Double)>> { rng in
            let integer = JSONFixtures.randomInt(&rng)
            let double: Double =
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: JSONFixtures.randomDouble(&rng)
                case 1: Double(integer)  // rounded: often just above or below
                default: Double(integer).nextUp
                }
            return (integer, double)
        }
        await propertyCheck(count: 1000, input: pairs) { integer, double in
            let exact = Float80(integer) < Float80(double) ? -1 : Float80(integer) == Float80(double) ? 0 : 1
            for op in JSONCondition.Operator.allCases {
                let expected: Bool =
                    switch op {
                    case .less: exact < 0
                    case .lessOrEqual: exact <= 0
                    case .equal: exact == 0
                    case .notEqual: exact != 0
                    case .greaterOrEqual: exact >= 0
                    case .greater: exact > 0
                    }
                let condition = JSONCondition(pointer: .root, predicate: .comparison(op, .double(double)))
                #expect(condition.holds(in: .int(integer)) == expected, "\(integer) \(op.rawValue) \(double)")
            }
        }
    }
    #endif
}
