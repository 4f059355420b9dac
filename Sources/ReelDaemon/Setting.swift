import ArgumentParser
import Foundation

/// The settings of `reeld`. Each has one name, used as the flag (`--data-dir`), as the config
/// file key (`data-dir`) and, upper-cased with `-` turned into `_` and prefixed with `REEL_`, as
/// the environment variable (`REEL_DATA_DIR`).
enum Setting: String, CaseIterable, Sendable {
    case dataDir = "data-dir"
    case socket
    case config
    case checkpointEvery = "checkpoint-every"
    case checkpointEveryBytes = "checkpoint-every-bytes"
    case logLevel = "log-level"
    case socketMode = "socket-mode"
    case socketGroup = "socket-group"
    case maxLineBytes = "max-line-bytes"
    case maxConnections = "max-connections"
    case eventLoops = "event-loops"
    case maxSubscriptions = "max-subscriptions"
    case idleTimeout = "idle-timeout"
    case maxMapSize = "max-map-size"
    case allowRead = "allow-read"
    case allowDispatch = "allow-dispatch"
    case allowAdmin = "allow-admin"
    case metrics
    case otlpEndpoint = "otlp-endpoint"
    case sharedLog = "shared-log"
    case changeIndex = "change-index"
    case takeOver = "take-over"

    var name: String { rawValue }
    var flag: String { "--" + rawValue }
    var environmentVariable: String {
        "REEL_" + rawValue.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// `--help`'s text for the option, from the setting's declaration.
    var argumentHelp: ArgumentHelp {
        let declaration = self.declaration
        return ArgumentHelp(declaration.helpText, valueName: declaration.valueName)
    }

    /// The setting an option property stands for: `_dataDir` or `dataDir` is `data-dir`.
    init?(propertyName: String) {
        var name = ""
        for character in propertyName.drop(while: { $0 == "_" }) {
            if character.isUppercase { name += "-" + character.lowercased() } else { name.append(character) }
        }
        self.init(rawValue: name)
    }

    /// Settings a config file may carry: all but `config` itself.
    static var fileKeys: [String] { allCases.filter { $0 != .config }.map(\.name) }
}

/// Where the value of a setting came from, for messages and the startup log.
public enum SettingSource: Sendable, Equatable, CustomStringConvertible {
    /// A command-line flag, such as `--data-dir`.
    case flag(String)
    /// An environment variable, such as `REEL_DATA_DIR`.
    case environment(String)
    /// A key of the config file.
    case configFile(path: String, key: String)
    /// Derived from a service manager's environment variable (`STATE_DIRECTORY`, `RUNTIME_DIRECTORY`).
    case serviceManager(String)
    /// Not set anywhere: the built-in default.
    case builtInDefault

    public var description: String {
        switch self {
        case .flag(let flag): "flag \(flag)"
        case .environment(let name): "environment variable \(name)"
        case .configFile(let path, let key): "config file \(path), key \(key)"
        case .serviceManager(let name): "default from $\(name)"
        case .builtInDefault: "default"
        }
    }
}
