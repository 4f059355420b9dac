import ArgumentParser
import ReelCore
import ReelJSON
import ReelProtocol

/// `reel describe`: the store's reducer and what each action type accepts.
struct DescribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe", abstract: "Show the reducer and the payload each action type takes.",
        discussion: """
            For each action type: what it does, its payload's shape and an example, as the store \
            describes them (a JSON Schema per type), and the version of its payload's shape when a \
            type has had more than one (older versions are still accepted: the store upcasts \
            them). With --json: the `describe` result, {"reducer", "actions": [{"type", \
            "version", "versions", "schema", "example"}]}.
            """
    )

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let printer = source.output.printer
        let description = try await source.open().call(Method.Describe.self, DescribeParams())
        if printer.isJSON {
            printer.json(description.asJSON)
            return
        }
        printer.line("reducer \(printer.style.bold(description.reducer.description))")
        for action in description.actions {
            printer.line("")
            printer.line(printer.style.bold(action.type) + (ActionShape.versions(action).map { " \($0)" } ?? ""))
            for line in ActionShape.lines(action) { printer.line("  " + line) }
        }
    }
}

/// An action type's description as lines of text, for `reel describe` and `reel dispatch --help`.
enum ActionShape {
    static func lines(_ action: ActionDescription) -> [String] {
        var lines: [String] = []
        if let summary = action.summary { lines.append(summary) }
        lines.append("payload: " + shape(action.schema))
        if !action.example.isNull {
            lines.append("example: \(ToolContext.current.programName) dispatch \(action.type) '\(action.example.jsonString)'")
        }
        return lines
    }

    /// Every type on a line of its own with its payload's shape, then what it does: the list in
    /// `dispatch --help`.
    static func helpText(_ actions: [ActionDescription]) -> String {
        actions.map { action in
            "  \(action.type) \(shape(action.schema))" + (versions(action).map { " \($0)" } ?? "")
                + (action.summary.map { "\n      \($0)" } ?? "")
        }.joined(separator: "\n")
    }

    /// `(version 2; reads 1 too)` for a type that has had more than one version, else `nil`.
    static func versions(_ action: ActionDescription) -> String? {
        let readable = action.readableVersions
        guard action.version != 1 || readable.count > 1 else { return nil }
        let older = readable.count > 1 ? "; reads \(readable.dropLast().map(String.init).joined(separator: ", ")) too" : ""
        return "(version \(action.version)\(older))"
    }

    /// A schema in one line: `{path: string, by?: number}`, `[{op, path, from?, value?}]`, `object`…
    static func shape(_ schema: JSONValue) -> String {
        if case .array(let choices)? = schema["enum"] {
            return choices.map(\.jsonString).joined(separator: " | ")
        }
        switch schema["type"]?.stringValue {
        case "object"?:
            guard case .object(let properties)? = schema["properties"], !properties.isEmpty else { return "object" }
            let required = Set((schema["required"]?.arrayValue ?? []).compactMap(\.stringValue))
            let members = properties.keys.sorted { (required.contains($0) ? 0 : 1, $0) < (required.contains($1) ? 0 : 1, $1) }
            return "{" + members.map { name in
                name + (required.contains(name) ? "" : "?") + ": " + shape(properties[name] ?? [:])
            }.joined(separator: ", ") + "}"
        case "array"?:
            return "[" + shape(schema["items"] ?? [:]) + ", …]"
        case let type?:
            return schema["format"] == "json-pointer" ? "JSON Pointer" : type
        case nil:
            return "any JSON"
        }
    }
}
