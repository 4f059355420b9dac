import Foundation
import ReelCore
import ReelJSON
import ReelTesting

/// Where a generated test finds the reducers: the module to import and the Swift expression that
/// builds the app's `StoreDefinition`.
public struct TestgenTarget: Sendable {
    public var module: String
    public var definition: String

    public init(module: String, definition: String) {
        self.module = module
        self.definition = definition
    }

    /// The stock JSON reducer's.
    static let stock = TestgenTarget(module: "ReelCore", definition: "StoreDefinition<JSONValue>.stock")
}

/// What the file says and checks.
struct TestgenOptions: Sendable {
    var target: TestgenTarget
    var paths: [String]
    var redactions: [String]
    var suiteName: String
    /// The command line that wrote it, for the file's first line.
    var commandLine: String
    var reducer: ReducerIdentity
    /// Where the start state goes instead of the file (`--state-file`): written here, and read by
    /// the test from a file of that name beside it.
    var stateFile: String?
}

/// Writes the Swift Testing file of `reel testgen`: the slice folded through `definition` as the
/// test will (``SliceFolder``), its changes the file's expectations.
struct TestgenWriter<State: StoreState> {
    let definition: StoreDefinition<State>

    func write(_ slice: HistorySlice, options: TestgenOptions) throws(ToolError) -> String {
        let folded = try SliceFolder(definition: definition).fold(slice, redacting: options.redactions)
        var lines = header(slice, options: options)
        let pathList = options.paths.isEmpty ? "" : ", paths: [" + options.paths.map(Self.literal).joined(separator: ", ") + "]"
        let startArgument: String
        if let stateFile = options.stateFile {
            do {
                try Data(folded.startState.serialized()).write(to: URL(fileURLWithPath: stateFile))
            } catch {
                throw ToolError("cannot write the state file \(stateFile): \(error.localizedDescription)", exitStatus: ExitStatus.unavailable)
            }
            startArgument = "stateFile: \(Self.literal(URL(fileURLWithPath: stateFile).lastPathComponent))"
        } else {
            startArgument = "state: \(Self.rawString(folded.startState.jsonString))"
        }
        lines.append("        var replay = try HistoryReplay(\(options.target.definition), after: \(slice.startSeq), \(startArgument)\(pathList))")
        for step in folded.steps {
            let envelope = step.envelope
            var call: String
            if step.isRevert {
                call = "try replay.revert(\(envelope.seq)"
            } else {
                call = "try replay.apply(\(envelope.seq), \(Self.literal(envelope.action.type))"
                if envelope.action.payload != .null { call += ", \(Self.rawString(envelope.action.payload.jsonString))" }
                if let version = envelope.action.version { call += ", version: \(version)" }
                call += ", time: \(envelope.time.nanosecondsSince1970)"
                let peer = envelope.peer
                if peer.uid != 0 || peer.gid != 0 || peer.pid != 0 { call += ", peer: (\(peer.uid), \(peer.gid), \(peer.pid))" }
            }
            lines.append("        \(call), change: \(Self.rawString(step.change.jsonValue.jsonString)))")
        }
        lines += ["    }", "}", ""]
        return lines.joined(separator: "\n")
    }

    private func header(_ slice: HistorySlice, options: TestgenOptions) -> [String] {
        let first = slice.startSeq + 1, last = slice.actions.last?.seq ?? slice.startSeq
        var lines = [
            "// Written by `\(options.commandLine)` (reducer \(options.reducer)).",
            "// The state recorded at seq \(slice.startSeq), then seqs \(first)…\(last) folded through the reducers, the state",
            "// after each compared with the recorded one\(options.paths.isEmpty ? "" : " at " + options.paths.joined(separator: ", "))."
                + " Write it again rather than edit it.",
        ]
        if !options.redactions.isEmpty {
            lines.append("// Redacted: \(options.redactions.joined(separator: ", ")) (in the state and the payloads).")
        }
        if let stateFile = options.stateFile {
            lines.append("// The state at seq \(slice.startSeq) is in \(URL(fileURLWithPath: stateFile).lastPathComponent), read from beside this file.")
        }
        lines += [
            "import ReelCore",
            "import ReelJSON",
            "import ReelTesting",
            "import Testing",
        ]
        if !["ReelCore", "ReelJSON", "ReelTesting", "Testing"].contains(options.target.module) {
            lines.append("import \(options.target.module)")
        }
        lines += [
            "",
            "@Suite struct \(options.suiteName) {",
            "    @Test func seqs\(first)To\(last)() throws {",
        ]
        return lines
    }

    /// A Swift string literal of `text` (escaped).
    static func literal(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            default:
                if scalar.value < 0x20 { escaped += "\\u{\(String(scalar.value, radix: 16))}" } else { escaped.unicodeScalars.append(scalar) }
            }
        }
        return "\"\(escaped)\""
    }

    /// A raw string literal of one line of JSON text: `#"…"#`, with as many `#` as it takes that
    /// no `"#…` inside ends it early and no `\#…` reads as an escape. (Compact JSON text holds no
    /// raw newline.)
    static func rawString(_ text: String) -> String {
        var hashes = 1
        while text.contains("\"" + String(repeating: "#", count: hashes)) || text.contains("\\" + String(repeating: "#", count: hashes)) {
            hashes += 1
        }
        let fence = String(repeating: "#", count: hashes)
        return "\(fence)\"\(text)\"\(fence)"
    }
}
