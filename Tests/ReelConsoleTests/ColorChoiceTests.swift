import Testing

@testable import ReelConsole

@Suite struct ColorChoiceTests {
    static func environment(_ variables: [String: String]) -> (String) -> String? {
        { variables[$0] }
    }

    @Test func autoNeedsATerminal() {
        #expect(ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment([:])))
        #expect(!ColorChoice.auto.usesColor(isTerminal: false, environment: Self.environment([:])))
        #expect(ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment(["TERM": "xterm-256color"])))
    }

    @Test(arguments: ["1", "0", "false", "yes", " "])
    func anyNonEmptyNoColorDisablesAuto(value: String) {
        #expect(!ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment(["NO_COLOR": value])))
    }

    @Test func anEmptyNoColorDoesNot() {
        #expect(ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment(["NO_COLOR": ""])))
    }

    @Test func aDumbTerminalGetsNoColor() {
        #expect(!ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment(["TERM": "dumb"])))
        #expect(ColorChoice.auto.usesColor(isTerminal: true, environment: Self.environment(["TERM": "dumb-ish"])))
    }

    @Test func alwaysAndNeverIgnoreTheTerminalAndTheEnvironment() {
        let hostile = Self.environment(["NO_COLOR": "1", "TERM": "dumb"])
        for isTerminal in [true, false] {
            #expect(ColorChoice.always.usesColor(isTerminal: isTerminal, environment: hostile))
            #expect(ColorChoice.always.usesColor(isTerminal: isTerminal, environment: Self.environment([:])))
            #expect(!ColorChoice.never.usesColor(isTerminal: isTerminal, environment: Self.environment([:])))
        }
    }

    @Test func parsesFlagValues() {
        #expect(ColorChoice(rawValue: "auto") == .auto)
        #expect(ColorChoice(rawValue: "always") == .always)
        #expect(ColorChoice(rawValue: "never") == .never)
        #expect(ColorChoice(rawValue: "yes") == nil)
    }

    @Test func stylerForADescriptor() {
        let pipe = TestPipe()
        let sink = FileDescriptorSink(descriptor: pipe.writeEnd)
        #expect(Styler(.auto, for: sink) == .plain)  // a pipe is no terminal
        #expect(Styler(.always, for: sink) == .ansi)
        #expect(Styler(.never, for: sink) == .plain)
        _ = pipe.drain()
    }
}
