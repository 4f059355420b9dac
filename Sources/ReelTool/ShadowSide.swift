import Foundation
import ReelCore
import ReelJSON
import ReelStorage
import ReelStore
import Synchronization

/// One reducer version folding the log in a shadow replay (``ShadowFold``): this program's own
/// reducers in this process, or another program's, run as `OLD_APP shadow-worker` and spoken to
/// through its standard input and output, one JSON value per line.
protocol ShadowSide: AnyObject {
    /// Folds through `last`; the seqs whose action the reducers refused.
    func advance(through last: UInt64) throws(ToolError) -> [UInt64]
    /// Back to the start of the last interval.
    func rewind() throws(ToolError)
    /// Back to the initial state, seq 0.
    func restart() throws(ToolError)
    /// Folds the next action; whether it was refused.
    func step() throws(ToolError) -> Bool
    /// The digest of each part (see ``ShadowFold/digests(of:by:)``), made as asked, or as the
    /// answer says it was made (a worker from before the choice makes `canonical` ones).
    func digests(_ paths: [JSONPointer], by digest: ShadowDigest) throws(ToolError) -> (ShadowDigest, [String: String])
    /// The value of each part.
    func values(_ paths: [JSONPointer]) throws(ToolError) -> JSONObject
    /// The reducers' name and version; `nil` from a worker from before the question.
    func identity() throws(ToolError) -> ReducerIdentity?
    /// Starts again from the checkpoint at `seq` (``ShadowFold/restore(fromCheckpointAt:sameReducers:)``).
    func restore(fromCheckpointAt seq: UInt64, sameReducers: Bool) throws(ToolError)
}

/// This program's side, which also reads the log for the other.
protocol LocalShadow: ShadowSide {
    func latestSeq() throws(ToolError) -> UInt64
    func envelope(at seq: UInt64) throws(ToolError) -> ActionEnvelope?
    /// The data directory's checkpoints, oldest first, with the reducers that made each.
    func checkpoints() throws(ToolError) -> [(seq: UInt64, reducer: ReducerIdentity)]
    /// Each segment folded by this version from the checkpoint at its start (or the initial state
    /// at 0), on as many threads as there are cores, with the digests of its end and of the
    /// checkpoint there (``ShadowCheckpointPass``).
    func foldSegments(_ segments: [ShadowSegment], paths: [JSONPointer]) -> [ShadowSegment.Outcome]
}

final class LocalShadowSide<State: StoreState>: LocalShadow {
    private var fold: ShadowFold<State>

    init(path: String, definition: StoreDefinition<State>) throws(ToolError) {
        let directory = try DataDirectory.openForReading(path, foldedWith: definition)
        fold = ShadowFold(timeline: Timeline(directory: directory, definition: definition))
    }

    func advance(through last: UInt64) throws(ToolError) -> [UInt64] {
        do { return try fold.advance(through: last) } catch { throw ToolError(error) }
    }

    func rewind() { fold.rewind() }

    func restart() { fold.restart() }

    /// The log's latest seq.
    func latestSeq() throws(ToolError) -> UInt64 {
        do { return try fold.timeline.latestSeq() } catch { throw ToolError(error) }
    }

    /// The action at `seq`.
    func envelope(at seq: UInt64) throws(ToolError) -> ActionEnvelope? {
        do { return try fold.timeline.directory.envelope(at: seq) } catch { throw ToolError(error) }
    }

    func step() throws(ToolError) -> Bool {
        do { return try fold.step() } catch { throw ToolError(error) }
    }

    func digests(_ paths: [JSONPointer], by digest: ShadowDigest) throws(ToolError) -> (ShadowDigest, [String: String]) {
        do { return (digest, try fold.digests(of: paths, by: digest)) } catch { throw ToolError(error) }
    }

    func values(_ paths: [JSONPointer]) throws(ToolError) -> JSONObject {
        do {
            return JSONObject(Dictionary(
                ShadowFold<State>.parts(of: try fold.json(), paths: paths),
                uniquingKeysWith: { first, _ in first }))
        } catch {
            throw ToolError(error)
        }
    }

    func identity() -> ReducerIdentity? { fold.timeline.definition.identity }

    func restore(fromCheckpointAt seq: UInt64, sameReducers: Bool) throws(ToolError) {
        do { try fold.restore(fromCheckpointAt: seq, sameReducers: sameReducers) } catch { throw ToolError(error) }
    }

    func checkpoints() throws(ToolError) -> [(seq: UInt64, reducer: ReducerIdentity)] {
        do {
            return try fold.timeline.directory.checkpointHeaders().map { ($0.seq, $0.reducer) }.sorted { $0.seq < $1.seq }
        } catch {
            throw ToolError(error)
        }
    }

    func foldSegments(_ segments: [ShadowSegment], paths: [JSONPointer]) -> [ShadowSegment.Outcome] {
        let timeline = fold.timeline
        let outcomes = Mutex<[Int: ShadowSegment.Outcome]>([:])
        DispatchQueue.concurrentPerform(iterations: segments.count) { index in
            let outcome = Self.fold(segments[index], timeline: timeline, paths: paths)
            outcomes.withLock { $0[index] = outcome }
        }
        return outcomes.withLock { all in segments.indices.map { all[$0]! } }
    }

    private static func fold(_ segment: ShadowSegment, timeline: Timeline<State>, paths: [JSONPointer]) -> ShadowSegment.Outcome {
        var outcome = ShadowSegment.Outcome(segment: segment)
        do {
            var fold = ShadowFold(timeline: timeline)
            if segment.from > 0 { try fold.restore(fromCheckpointAt: segment.from, sameReducers: false) }
            outcome.refused = try fold.advance(through: segment.through)
            outcome.digests = try fold.digests(of: paths)
            guard let checkpoint = try timeline.directory.checkpoint(at: segment.through) else {
                outcome.problem = "the checkpoint at seq \(segment.through) is gone"
                return outcome
            }
            outcome.recorded = ShadowFold<State>.digests(of: try checkpoint.state(checkingHash: true), paths: paths)
        } catch let error as StoreError {
            outcome.problem = error.message
        } catch let error as StorageError {
            outcome.problem = error.message
        } catch {
            outcome.problem = "\(error)"
        }
        return outcome
    }
}

/// The other version: `EXECUTABLE shadow-worker --data-dir DIR`, one request and one answer per
/// line (``LocalShadowSide/answer(_:)``).
final class ProcessShadowSide: ShadowSide {
    private let process = Process()
    private let input: FileHandle
    private let output: FileHandle
    private var buffered: [UInt8] = []
    private let name: String

    init(executable: String, dataDirectory: String) throws(ToolError) {
        name = executable
        let toWorker = Pipe()
        let fromWorker = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["shadow-worker", "--data-dir", dataDirectory]
        process.standardInput = toWorker
        process.standardOutput = fromWorker
        // A baseline that exits early must be an error to report, not a SIGPIPE that kills us.
        signal(SIGPIPE, SIG_IGN)
        do {
            try process.run()
        } catch {
            throw ToolError(
                "cannot run the baseline \(executable): \(error.localizedDescription)",
                exitStatus: ExitStatus.unavailable)
        }
        input = toWorker.fileHandleForWriting
        output = fromWorker.fileHandleForReading
    }

    deinit {
        try? input.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    private var notAnswering: ToolError {
        ToolError("the baseline \(name) exited without answering (is it an app built with ReelApp?)", exitStatus: ExitStatus.unavailable)
    }

    private func request(_ value: JSONValue) throws(ToolError) -> JSONValue {
        try send(value)
        return try receive()
    }

    private func send(_ value: JSONValue) throws(ToolError) {
        do {
            try input.write(contentsOf: Data((value.jsonString + "\n").utf8))
        } catch {
            throw notAnswering
        }
    }

    private func receive() throws(ToolError) -> JSONValue {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffered[..<newline])
                buffered.removeSubrange(...newline)
                guard let answer = try? JSONValue(parsing: String(decoding: line, as: UTF8.self)) else {
                    throw ToolError(
                        "the baseline \(name) answered something that is not JSON",
                        exitStatus: ExitStatus.unavailable)
                }
                if case .string(let message)? = answer["error"] {
                    throw ToolError("the baseline \(name): \(message)")
                }
                return answer
            }
            let more = output.availableData
            guard !more.isEmpty else { throw notAnswering }
            buffered += more
        }
    }

    func advance(through last: UInt64) throws(ToolError) -> [UInt64] {
        try startAdvance(through: last)
        return try finishAdvance()
    }

    /// Asks the baseline to fold through `last` and returns at once: the two versions fold at the
    /// same time, each on a core, until ``finishAdvance()``.
    func startAdvance(through last: UInt64) throws(ToolError) {
        try send(["advance": .int(Int64(last))])
    }

    /// The refused seqs of the fold ``startAdvance(through:)`` asked for.
    func finishAdvance() throws(ToolError) -> [UInt64] {
        guard case .array(let seqs)? = try receive()["refused"] else { return [] }
        return seqs.compactMap { $0.intValue.map { UInt64($0) } }
    }

    func rewind() throws(ToolError) {
        _ = try request(["rewind": true])
    }

    func restart() throws(ToolError) {
        _ = try request(["restart": true])
    }

    func step() throws(ToolError) -> Bool {
        try request(["step": true])["refused"] == .bool(true)
    }

    func digests(_ paths: [JSONPointer], by digest: ShadowDigest) throws(ToolError) -> (ShadowDigest, [String: String]) {
        let answer = try request(["digests": .array(paths.map { .string($0.description) }), "digest": .string(digest.rawValue)])
        let made = answer["digest"]?.stringValue.flatMap(ShadowDigest.init(rawValue:)) ?? .canonical
        guard case .object(let members)? = answer["digests"] else { return (made, [:]) }
        return (made, members.dictionary.compactMapValues(\.stringValue))
    }

    func values(_ paths: [JSONPointer]) throws(ToolError) -> JSONObject {
        guard
            case .object(let members)? = try request([
                "values": .array(paths.map { .string($0.description) })
            ])["values"]
        else { return [:] }
        return members
    }

    /// A worker from before the question answers with an error: no identity, and no checkpoint pass.
    func identity() throws(ToolError) -> ReducerIdentity? {
        guard let answer = try? request(["identity": true]),
            let name = answer["name"]?.stringValue, let version = answer["version"]?.stringValue
        else { return nil }
        return ReducerIdentity(name: name, version: version)
    }

    func restore(fromCheckpointAt seq: UInt64, sameReducers: Bool) throws(ToolError) {
        _ = try request(["restore": .int(Int64(seq)), "sameReducers": .bool(sameReducers)])
    }
}

extension ShadowSide {
    /// Answers one request of the worker's protocol (``ProcessShadowSide``).
    func answer(_ request: JSONValue) -> JSONValue {
        do throws(ToolError) {
            let paths = { (name: String) throws(ToolError) -> [JSONPointer] in
                guard case .array(let items)? = request[name] else { return [] }
                var paths: [JSONPointer] = []
                for item in items {
                    guard case .string(let text) = item, let path = try? JSONPointer(text) else {
                        throw ToolError("bad path \(item)")
                    }
                    paths.append(path)
                }
                return paths
            }
            if let through = request["advance"]?.intValue {
                return [
                    "refused": .array(try advance(through: UInt64(max(through, 0))).map { .int(Int64($0)) })
                ]
            }
            if request["rewind"] != nil {
                try rewind()
                return ["rewound": true]
            }
            if request["restart"] != nil {
                try restart()
                return ["restarted": true]
            }
            if request["step"] != nil {
                return ["refused": .bool(try step())]
            }
            if request["digests"] != nil {
                let asked = request["digest"]?.stringValue.flatMap(ShadowDigest.init(rawValue:)) ?? .canonical
                let (made, digests) = try digests(try paths("digests"), by: asked)
                return ["digests": .object(JSONObject(digests.mapValues { .string($0) })), "digest": .string(made.rawValue)]
            }
            if request["values"] != nil {
                return ["values": .object(try values(try paths("values")))]
            }
            if request["identity"] != nil, let identity = try identity() {
                return ["name": .string(identity.name), "version": .string(identity.version)]
            }
            if let seq = request["restore"]?.intValue, seq >= 0 {
                try restore(fromCheckpointAt: UInt64(seq), sameReducers: request["sameReducers"] != .bool(false))
                return ["restored": .int(seq)]
            }
            throw ToolError("unknown request \(request.jsonString)")
        } catch {
            return ["error": .string(error.message)]
        }
    }
}
