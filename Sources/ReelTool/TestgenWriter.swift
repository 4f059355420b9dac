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

/// A slice of history to write a test of, as the command read it.
struct TestgenSlice: Sendable {
    /// The seq before the first action, and the state recorded there.
    var startSeq: UInt64
    var startState: JSONValue
    var actions: [ActionEnvelope]
    /// The state recorded after the last action.
    var endState: JSONValue
    /// The state recorded after each `@revert` of the slice, by seq.
    var revertedStates: [UInt64: JSONValue]
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

/// Writes the Swift Testing file of `reel testgen`, folding the slice through `definition` with
/// ``HistoryReplay`` as the test will; its changes become the file's expectations. The fold as
/// recorded must end in the recorded state (else these are not the reducers that recorded it):
/// without redaction that fold is the one written, checked at its end; redacted, the slice is
/// folded as recorded first.
struct TestgenWriter<State: StoreState> {
    let definition: StoreDefinition<State>

    func write(_ slice: TestgenSlice, options: TestgenOptions) throws(ToolError) -> String {
        var redaction: TestRedaction
        do {
            redaction = try TestRedaction(options.redactions)
        } catch {
            throw ToolError("--redact: \(error.message)", exitStatus: ExitStatus.usage)
        }
        if !redaction.isEmpty { try checkReproduces(slice) }
        let start = redaction.redact(slice.startState)
        var lines = header(slice, options: options)
        var replay: HistoryReplay<State>
        do {
            replay = try HistoryReplay(definition, after: slice.startSeq, state: start.jsonString, paths: options.paths)
        } catch {
            throw ToolError("the state at seq \(slice.startSeq) does not load into this program's state: \(error)")
        }
        let pathList = options.paths.isEmpty ? "" : ", paths: [" + options.paths.map(Self.literal).joined(separator: ", ") + "]"
        let startArgument: String
        if let stateFile = options.stateFile {
            do {
                try Data(start.serialized()).write(to: URL(fileURLWithPath: stateFile))
            } catch {
                throw ToolError("cannot write the state file \(stateFile): \(error.localizedDescription)", exitStatus: ExitStatus.unavailable)
            }
            startArgument = "stateFile: \(Self.literal(URL(fileURLWithPath: stateFile).lastPathComponent))"
        } else {
            startArgument = "state: \(Self.rawString(start.jsonString))"
        }
        lines.append("        var replay = try HistoryReplay(\(options.target.definition), after: \(slice.startSeq), \(startArgument)\(pathList))")
        var before = start
        for envelope in slice.actions {
            let after: JSONValue
            var call: String
            if case .revert? = try? StoreAction(envelope.action) {
                guard let restored = slice.revertedStates[envelope.seq] else {
                    throw ToolError("the state after the @revert at seq \(envelope.seq) was not read")
                }
                after = redaction.redact(restored)
                do {
                    try replay.restore(envelope.seq, to: after)
                } catch {
                    throw ToolError("the state after the @revert at seq \(envelope.seq) does not load into this program's state: \(error)")
                }
                call = "try replay.revert(\(envelope.seq)"
            } else {
                var redacted = envelope
                if !redaction.isEmpty { redacted.action.payload = redaction.redact(envelope.action.payload) }
                do {
                    try replay.fold(redacted)
                    after = try replay.state.jsonValue()
                } catch {
                    throw redaction.isEmpty
                        ? notReplayed(error) : ToolError("seq \(envelope.seq) (\(envelope.action.type)) does not replay once redacted: \(error)")
                }
                call = "try replay.apply(\(envelope.seq), \(Self.literal(envelope.action.type))"
                if redacted.action.payload != .null { call += ", \(Self.rawString(redacted.action.payload.jsonString))" }
                if let version = envelope.action.version { call += ", version: \(version)" }
                call += ", time: \(envelope.time.nanosecondsSince1970)"
                let peer = envelope.peer
                if peer.uid != 0 || peer.gid != 0 || peer.pid != 0 { call += ", peer: (\(peer.uid), \(peer.gid), \(peer.pid))" }
            }
            let change = JSONPatch(from: before, to: after).jsonValue.jsonString
            lines.append("        \(call), change: \(Self.rawString(change)))")
            before = after
        }
        if redaction.isEmpty, before != slice.endState { throw notReproduced(slice) }
        lines += ["    }", "}", ""]
        return lines.joined(separator: "\n")
    }

    /// The slice folded as recorded must end in the recorded state.
    private func checkReproduces(_ slice: TestgenSlice) throws(ToolError) {
        do {
            var replay = try HistoryReplay(definition, after: slice.startSeq, state: slice.startState.jsonString)
            for envelope in slice.actions {
                if case .revert? = try? StoreAction(envelope.action) {
                    try replay.restore(envelope.seq, to: slice.revertedStates[envelope.seq] ?? .null)
                } else {
                    try replay.fold(envelope)
                }
            }
            guard try replay.state.jsonValue() == slice.endState else { throw notReproduced(slice) }
        } catch let error as ToolError {
            throw error
        } catch {
            throw notReplayed(error)
        }
    }

    private func notReproduced(_ slice: TestgenSlice) -> ToolError {
        let seq = slice.actions.last?.seq ?? slice.startSeq
        return ToolError(
            "these reducers (\(definition.identity)) do not make the state recorded at seq \(seq) from that at seq \(slice.startSeq): "
                + "write the test with the program that recorded the history"
        )
    }

    private func notReplayed(_ error: any Error) -> ToolError {
        ToolError("the slice does not replay with these reducers (\(definition.identity)): \(error)")
    }

    private func header(_ slice: TestgenSlice, options: TestgenOptions) -> [String] {
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
