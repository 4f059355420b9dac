import Configuration
import Foundation
import ReelJSON
import Yams

/// The config file given by `--config` / `REEL_CONFIG`: checked, then read by swift-configuration.
///
/// YAML (so that the example can carry comments), or JSON when the name ends in `.json`. The top
/// level is a mapping from setting names (the flags without `--`) to values. Before handing the
/// file to swift-configuration's `FileProvider`, it is checked here so that mistakes stop the
/// daemon with a clear line instead of being ignored: an unknown key (a typo such as `data_dir`),
/// a nested mapping, or a key with no value (`allow-admin:` would otherwise mean "nobody").
/// A file with no settings at all (only comments) is fine.
enum ConfigFile {
    /// A provider for the file's settings, or `nil` when it holds none.
    static func provider(path: String, source: SettingSource) async throws(StartupError) -> (any ConfigProvider)? {
        let where_ = "config file \(path) (from \(source))"
        let bytes: [UInt8]
        do {
            guard let info = try FileSystemCalls.status(path) else {
                throw StartupError(.configFile, "\(where_) does not exist")
            }
            guard info.isRegularFile else { throw StartupError(.configFile, "\(where_) is not a regular file") }
            bytes = try FileSystemCalls.readFile(path)
        } catch let error as StartupError {
            throw error
        } catch {
            throw StartupError(.configFile, "cannot read \(where_): \((error as? FileSystemCalls.Failure)?.reason ?? "\(error)")")
        }
        let isJSON = path.lowercased().hasSuffix(".json")
        let keys = try isJSON ? jsonKeys(bytes, where_) : yamlKeys(bytes, where_)
        guard !keys.isEmpty else { return nil }

        let pathReader = ConfigReader(provider: InMemoryProvider(values: ["filePath": .init(.string(path), isSecret: false)]))
        do {
            if isJSON {
                return try await FileProvider<JSONSnapshot>(config: pathReader)
            }
            return try await FileProvider<YAMLSnapshot>(config: pathReader)
        } catch {
            throw StartupError(.configFile, "cannot read \(where_): \(error)", underlying: error)
        }
    }

    /// The top-level keys of a YAML file, after checking them.
    private static func yamlKeys(_ bytes: [UInt8], _ where_: String) throws(StartupError) -> [String] {
        let root: Node?
        do {
            root = try Yams.compose(yaml: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw StartupError(.configFile, "\(where_) is not valid YAML: \(Self.describe(error))", underlying: error)
        }
        guard let root else { return [] }
        guard let mapping = root.mapping else {
            throw StartupError(.configFile, "\(where_) must be a mapping of settings, such as `data-dir: /var/lib/reel`")
        }
        var keys: [String] = []
        for (key, value) in mapping {
            guard let name = key.scalar?.string else {
                throw StartupError(.configFile, "\(where_) has a key that is not a name")
            }
            let shape: ValueShape =
                if value.mapping != nil { .mapping }
                else if let sequence = value.sequence { sequence.contains { $0.scalar == nil } ? .mapping : .value }
                else if let scalar = value.scalar, NSNull.construct(from: scalar) != nil { .null }
                else { .value }
            try check(name, shape, where_)
            keys.append(name)
        }
        return keys
    }

    /// The top-level keys of a JSON file, after checking them.
    private static func jsonKeys(_ bytes: [UInt8], _ where_: String) throws(StartupError) -> [String] {
        do {
            _ = try JSONValue(parsing: bytes)
        } catch {
            throw StartupError(.configFile, "\(where_) is not valid JSON: \(Self.describe(error, in: bytes))", underlying: error)
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            throw StartupError(.configFile, "\(where_) is not valid JSON: \(error.localizedDescription)", underlying: error)
        }
        guard let dictionary = object as? [String: Any] else {
            throw StartupError(.configFile, "\(where_) must be an object of settings, such as {\"data-dir\": \"/var/lib/reel\"}")
        }
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            let shape: ValueShape =
                if value is [String: Any] { .mapping }
                else if let array = value as? [Any] { array.contains { $0 is [Any] || $0 is [String: Any] || $0 is NSNull } ? .mapping : .value }
                else if value is NSNull { .null }
                else { .value }
            try check(name, shape, where_)
        }
        return Array(dictionary.keys)
    }

    private enum ValueShape { case value, mapping, null }

    /// Yams' error as "line L, column C: problem", without the echo of the line it appends.
    private static func describe(_ error: any Error) -> String {
        guard let yaml = error as? YamlError else { return "\(error)" }
        switch yaml {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let during = context.map { " (\($0.text), from line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return "line \(mark.line), column \(mark.column): \(problem)\(during)"
        default:
            return "\(error)".split(separator: "\n").first.map(String.init) ?? "\(error)"
        }
    }

    /// ReelJSON's error, its byte offset given as a line and column (from 1, columns in bytes).
    private static func describe(_ error: JSONError, in bytes: [UInt8]) -> String {
        guard let offset = error.offset, offset <= bytes.count else { return error.message }
        let before = bytes[..<offset]
        let line = before.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let column = offset - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
        var problem = error.message
        if let range = problem.range(of: " at byte \(offset)") { problem.removeSubrange(range) }
        return "line \(line), column \(column): \(problem)"
    }

    private static func check(_ name: String, _ shape: ValueShape, _ where_: String) throws(StartupError) {
        guard Setting.fileKeys.contains(name) else {
            let hint = name == Setting.config.name
                ? "a config file cannot name another config file"
                : "known settings: \(Setting.fileKeys.joined(separator: ", "))"
            throw StartupError(.configFile, "\(where_) has an unknown setting '\(name)' (\(hint))")
        }
        switch shape {
        case .value: return
        case .mapping:
            throw StartupError(.configFile, "\(where_): \(name) must be a value or a list of values, not a mapping")
        case .null:
            throw StartupError(.configFile, "\(where_): \(name) has no value; write one, or remove the key to use the default")
        }
    }
}
