import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel blame [PATH] [--at SEQ]`: each leaf of the state under PATH with the action that last
/// changed it, one line per leaf, aligned like `git blame`.
struct BlameCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blame", abstract: "Show which action last changed each value under a path.",
        discussion: """
            One line per leaf under PATH (a value that is not an object or array, or an empty \
            one) in the state at --at (default: the latest seq), in document order: the seq, \
            time, type and peer of the action that last changed it, its path and its value. A \
            leaf no action changed (as the initial state has it) shows '-'. Answered from the \
            store's change index. With --json: one line per leaf, {path, value, seq, type?, \
            time?, peer?} (seq 0 for a leaf no action changed).
            """
    )

    @Argument(help: ArgumentHelp("A JSON Pointer into the state (default: the whole state).", valueName: "path"), transform: PointerArgument.parse)
    var path: PointerArgument?
    @Option(
        name: .customLong("at"), parsing: .unconditional, help: ArgumentHelp("The seq whose state to blame (default: the latest).", valueName: "seq"),
        transform: SeqArgument.parse
    )
    var at: SeqArgument?
    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let store = try await source.open()
        let path = self.path?.pointer ?? .root
        var params = BlameParams(path: path, at: at?.value)
        var rows: [[String]] = []
        var value: JSONValue?
        while true {
            let page = try await store.call(Method.Blame.self, params)
            // The values come from the same state: the first page fixes the seq.
            if value == nil { value = try await store.value(at: page.seq, path: path).value }
            params.at = page.seq
            for entry in page.entries {
                let leaf = Self.relative(entry.path, to: path).flatMap { value?.value(at: $0) } ?? .null
                if printer.isJSON {
                    var members: JSONObject = ["path": .string(entry.path.description), "value": leaf, "seq": JSONValue(seq: entry.seq ?? 0)]
                    if let type = entry.type { members["type"] = .string(type) }
                    if let time = entry.time { members["time"] = .string(time.rfc3339) }
                    if let peer = entry.peer { members["peer"] = peer.wireJSON }
                    printer.json(.object(members))
                } else {
                    rows.append([
                        entry.seq.map(String.init) ?? "-", entry.time?.rfc3339Seconds ?? "-", entry.type ?? "-",
                        entry.peer.map(ActionTable.peer) ?? "-", entry.path.isRoot ? "\"\"" : entry.path.description, leaf.jsonString,
                    ])
                }
            }
            guard let next = page.next else { break }
            params.after = next
        }
        if !printer.isJSON { printer.table(["SEQ", "TIME", "TYPE", "PEER", "PATH", "VALUE"], rows: rows, rightAligned: [0]) }
    }

    /// `leaf` as a pointer inside the value at `base`.
    static func relative(_ leaf: JSONPointer, to base: JSONPointer) -> JSONPointer? {
        guard base.isPrefix(of: leaf) else { return nil }
        return JSONPointer(tokens: Array(leaf.tokens.dropFirst(base.tokens.count)))
    }
}
