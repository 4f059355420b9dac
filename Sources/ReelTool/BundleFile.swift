import CompressNIO
import Foundation
import NIOCore
import ReelCore
import ReelJSON
import ReelProtocol
import ReelQuery

/// A bug-report bundle (`reel bundle`): a slice of history in one file that `reel import --bundle`
/// turns into a data directory and every read command takes with `--bundle`.
///
/// The file is gzip-compressed JSON Lines, so that `zcat FILE | jq` reads it:
///
/// ```
/// {"reelBundle":1,"from":A,"to":B,"reducer":{"name":…,"version":…},"digest":"…","actions":N,"redacted":[…],"created":"…","source":"…"}
/// {"state":…}                          the state at A-1
/// {"action":{…},"change":[…]}          each action A…B as `reel export` writes it, and the JSON
///                                      Patch of what it changed
/// ```
///
/// Each action carries what it changed, so that a replay elsewhere (other reducers, another
/// build) names the first action whose outcome differs and each differing field, not only that
/// the end state's `digest` (SHA-256 of its canonical JSON, as the `digest` method gives) is
/// another. JSON Lines compressed rather than a binary format: a bundle is read by people and
/// attached to tickets, and gzip takes a patch that repeats its action's payload almost for free
/// (10,000 stock actions: see BENCHMARKS.md, *Bundles*).
struct BundleFile: Sendable {
    /// The format this build writes and reads.
    static let format = 1

    struct Step: Sendable {
        var envelope: ActionEnvelope
        var change: JSONPatch
    }

    /// The seq before the first action, and the state there.
    var startSeq: UInt64
    var startState: JSONValue
    var steps: [Step]
    /// The reducers that recorded the slice.
    var reducer: ReducerIdentity
    /// The SHA-256 of the state after the last action, as the recorded changes make it.
    var digest: String
    /// The JSON Pointers whose values were replaced by placeholders.
    var redacted: [String]
    var created: Timestamp
    /// Where the slice came from (the store's label), for the person who receives it.
    var source: String

    /// The last seq.
    var endSeq: UInt64 { steps.last?.envelope.seq ?? startSeq }

    init(folded: FoldedSlice, reducer: ReducerIdentity, redacted: [String], source: String) {
        startSeq = folded.startSeq
        startState = folded.startState
        steps = folded.steps.map { Step(envelope: $0.envelope, change: $0.change) }
        self.reducer = reducer
        digest = Self.digest(of: folded.endState)
        self.redacted = redacted
        created = .now()
        self.source = source
    }

    /// The digest of a state, as the `digest` method and `reel digest` give it.
    static func digest(of state: JSONValue) -> String {
        TimelineQueries<JSONValue>.digest(state, seq: 0).sha256
    }

    // MARK: - Writing

    /// The file's bytes: the JSON lines, gzip-compressed.
    func encoded() throws(ToolError) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(steps.count * 256)
        let header: JSONValue = .object([
            "reelBundle": .int(Int64(Self.format)),
            "from": JSONValue(seq: startSeq + 1),
            "to": JSONValue(seq: endSeq),
            "reducer": .object(["name": .string(reducer.name), "version": .string(reducer.version)]),
            "digest": .string(digest),
            "actions": .int(Int64(steps.count)),
            "redacted": .array(redacted.map(JSONValue.string)),
            "created": .string(created.rfc3339),
            "source": .string(source),
        ])
        text += header.serialized()
        text.append(UInt8(ascii: "\n"))
        text += JSONValue.object(["state": startState]).serialized()
        text.append(UInt8(ascii: "\n"))
        for step in steps {
            text += Array(#"{"action":"#.utf8)
            step.envelope.writeWire(into: &text)
            text += Array(#","change":"#.utf8)
            text += step.change.jsonValue.serialized()
            text += Array("}\n".utf8)
        }
        do {
            var input = ByteBuffer(bytes: text)
            let compressor = CompressionAlgorithm.gzip(configuration: .init(compressionLevel: 9)).compressor
            try compressor.startStream()
            var output = ByteBufferAllocator().buffer(capacity: compressor.maxSize(from: input))
            try compressor.streamDeflate(from: &input, to: &output, flush: .finish)
            try compressor.finishStream()
            return Array(output.readableBytesView)
        } catch {
            throw ToolError("cannot compress the bundle: \(error)")
        }
    }

    /// Writes the file whole or not at all (a temporary file renamed into place).
    func write(to path: String) throws(ToolError) {
        let bytes = try encoded()
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ToolError("cannot write \(path): \(error.localizedDescription)", exitStatus: ExitStatus.unavailable)
        }
    }

    // MARK: - Reading

    /// Reads and checks a bundle: its lines, their shapes, and seqs that follow each other.
    static func read(from path: String) throws(ToolError) -> BundleFile {
        let compressed: Data
        do {
            compressed = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ToolError("cannot read the bundle \(path): \(error.localizedDescription)", exitStatus: ExitStatus.dataError)
        }
        guard compressed.starts(with: [0x1F, 0x8B]) else {
            throw notABundle(path, "it is not gzip-compressed (a bundle is what `reel bundle` writes)")
        }
        var text: ByteBuffer
        do {
            var input = ByteBuffer(bytes: compressed)
            text = try input.decompress(with: .gzip())
        } catch {
            throw notABundle(path, "its compressed data is damaged (\(error))")
        }
        // gzip ends with the uncompressed size (mod 2^32): a file cut short ends elsewhere, and
        // zlib, given what there is, returns what it could inflate.
        let trailer = compressed.suffix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard compressed.count >= 18, trailer == UInt32(truncatingIfNeeded: text.readableBytes) else {
            throw notABundle(path, "its compressed data is damaged: it was cut short or changed")
        }
        let lines = text.readableBytesView.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        guard lines.count >= 2 else { throw notABundle(path, "it has \(lines.count) line(s), where a bundle has a header and a state at least") }
        func parse(_ index: Int) throws(ToolError) -> JSONValue {
            do {
                return try JSONValue(parsing: Array(lines[index]))
            } catch {
                throw notABundle(path, "line \(index + 1) is not valid JSON: \(error.message)")
            }
        }
        let header = try parse(0)
        guard case .object(let fields) = header, let version = fields["reelBundle"]?.intValue else {
            throw notABundle(path, "its first line is not a bundle's header")
        }
        guard version == Int64(format) else {
            throw notABundle(path, "it is of bundle format \(version); this build reads format \(format)")
        }
        guard let first = fields["from"]?.intValue, let last = fields["to"]?.intValue, first >= 1, last + 1 >= first,
            case .object(let reducerFields)? = fields["reducer"], case .string(let name)? = reducerFields["name"],
            case .string(let reducerVersion)? = reducerFields["version"], case .string(let digest)? = fields["digest"],
            let count = fields["actions"]?.intValue, count == last + 1 - first
        else {
            throw notABundle(path, "its header lacks from, to, reducer, digest or actions, or they disagree")
        }
        let (from, to) = (UInt64(first), UInt64(last))
        guard lines.count == Int(count) + 2 else {
            throw notABundle(path, "its header counts \(count) actions but it holds \(lines.count - 2): it was cut short or added to")
        }
        guard case .object(let stateLine) = try parse(1), let startState = stateLine["state"] else {
            throw notABundle(path, "its second line is not the state it starts from")
        }
        var bundle = BundleFile(
            startSeq: from - 1, startState: startState, steps: [], reducer: ReducerIdentity(name: name, version: reducerVersion),
            digest: digest, redacted: fields["redacted"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            created: fields["created"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? Timestamp(nanosecondsSince1970: 0),
            source: fields["source"]?.stringValue ?? ""
        )
        bundle.steps.reserveCapacity(Int(count))
        for index in 2..<lines.count {
            guard case .object(let members) = try parse(index), let action = members["action"], let change = members["change"] else {
                throw notABundle(path, "line \(index + 1) is not an action with its change")
            }
            let step: Step
            do {
                step = Step(envelope: try ActionEnvelope(wire: action), change: try JSONPatch(change))
            } catch let error as RPCError {
                throw notABundle(path, "line \(index + 1): \(error.message)")
            } catch {
                throw notABundle(path, "line \(index + 1): \(error)")
            }
            let expected = from + UInt64(index - 2)
            guard step.envelope.seq == expected else {
                throw notABundle(path, "line \(index + 1) holds seq \(step.envelope.seq) where seq \(expected) belongs")
            }
            bundle.steps.append(step)
        }
        return bundle
    }

    private init(
        startSeq: UInt64, startState: JSONValue, steps: [Step], reducer: ReducerIdentity, digest: String, redacted: [String],
        created: Timestamp, source: String
    ) {
        (self.startSeq, self.startState, self.steps, self.reducer) = (startSeq, startState, steps, reducer)
        (self.digest, self.redacted, self.created, self.source) = (digest, redacted, created, source)
    }

    private static func notABundle(_ path: String, _ reason: String) -> ToolError {
        ToolError("\(path) is not a bundle this program reads: \(reason)", exitStatus: ExitStatus.dataError)
    }
}
