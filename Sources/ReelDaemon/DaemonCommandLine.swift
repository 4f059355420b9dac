import ArgumentParser
import ReelProtocol

/// The command line of `reeld`, declared with swift-argument-parser for its help text and its
/// refusal of unknown flags. Every option is optional text with no default here: values are
/// validated in one place for all sources by ``DaemonConfiguration/load(arguments:environment:identityResolver:)``,
/// and an option left out must fall through to the environment, the config file and the defaults.
struct DaemonCommandLine: ParsableCommand {
    private typealias Defaults = DaemonConfiguration.Defaults

    /// The name the running program is called by, for the usage line, the version and the
    /// messages: `reeld`, or an app's `reel-rpg serve` (``DaemonConfiguration/load(arguments:environment:identityResolver:)``
    /// sets it from the command line's first element while it parses).
    @TaskLocal static var programName = "reeld"

    static var configuration: CommandConfiguration {
        let name = programName
        return CommandConfiguration(
            commandName: name,
            abstract: "Reel's daemon: an event-sourced state store shared by local processes over a Unix socket.",
            discussion: """
                Every setting can also come from an environment variable (the flag's name in capitals \
                with - as _ and the prefix REEL_, such as REEL_DATA_DIR) or from the config file (YAML, \
                or JSON when its name ends in .json; the flag's name as key, such as `data-dir: /var/lib/reel`). \
                A flag wins over the environment, which wins over the config file, which wins over the defaults.

                Under systemd (StateDirectory=, RuntimeDirectory=) the data directory defaults to \
                $STATE_DIRECTORY and the socket to $RUNTIME_DIRECTORY/reel.sock.

                Allow lists are comma-separated: a uid or user name, `self` (the daemon's own user), \
                @GROUP (a gid or group name: peers whose primary group it is, or who are listed \
                members of it), `*` (anyone who can reach the socket), or `none`.

                \(name) exits 0 after a graceful shutdown on SIGTERM or SIGINT, and with a one-line \
                reason and a non-zero status when it cannot start.
                """,
            // An app's `serve` has the app's version line: `reel-rpg 0.1.0 (protocol 1)`.
            version: ReelRelease.versionLine(program: name.split(separator: " ").first.map(String.init) ?? name)
        )
    }

    // One option per setting of `Setting.table`, its name and help taken from there; `values`
    // finds them by name (a test checks that every setting has its option and no other exists).
    @Option(name: .customLong(Setting.dataDir.name), help: Setting.dataDir.argumentHelp) var dataDir: String?
    @Option(name: .customLong(Setting.socket.name), help: Setting.socket.argumentHelp) var socket: String?
    @Option(name: .customLong(Setting.config.name), help: Setting.config.argumentHelp) var config: String?
    @Option(name: .customLong(Setting.checkpointEvery.name), help: Setting.checkpointEvery.argumentHelp) var checkpointEvery: String?
    @Option(name: .customLong(Setting.checkpointEveryBytes.name), help: Setting.checkpointEveryBytes.argumentHelp) var checkpointEveryBytes: String?
    @Option(name: .customLong(Setting.logLevel.name), help: Setting.logLevel.argumentHelp) var logLevel: String?
    @Option(name: .customLong(Setting.socketMode.name), help: Setting.socketMode.argumentHelp) var socketMode: String?
    @Option(name: .customLong(Setting.socketGroup.name), help: Setting.socketGroup.argumentHelp) var socketGroup: String?
    @Option(name: .customLong(Setting.maxLineBytes.name), help: Setting.maxLineBytes.argumentHelp) var maxLineBytes: String?
    @Option(name: .customLong(Setting.maxConnections.name), help: Setting.maxConnections.argumentHelp) var maxConnections: String?
    @Option(name: .customLong(Setting.eventLoops.name), help: Setting.eventLoops.argumentHelp) var eventLoops: String?
    @Option(name: .customLong(Setting.maxSubscriptions.name), help: Setting.maxSubscriptions.argumentHelp) var maxSubscriptions: String?
    @Option(name: .customLong(Setting.idleTimeout.name), help: Setting.idleTimeout.argumentHelp) var idleTimeout: String?
    @Option(name: .customLong(Setting.maxMapSize.name), help: Setting.maxMapSize.argumentHelp) var maxMapSize: String?
    @Option(name: .customLong(Setting.metrics.name), help: Setting.metrics.argumentHelp) var metrics: String?
    @Option(name: .customLong(Setting.otlpEndpoint.name), help: Setting.otlpEndpoint.argumentHelp) var otlpEndpoint: String?
    @Option(name: .customLong(Setting.sharedLog.name), help: Setting.sharedLog.argumentHelp) var sharedLog: String?
    @Option(name: .customLong(Setting.changeIndex.name), help: Setting.changeIndex.argumentHelp) var changeIndex: String?
    @Option(name: .customLong(Setting.takeOver.name), help: Setting.takeOver.argumentHelp) var takeOver: String?
    @Option(name: .customLong(Setting.allowRead.name), help: Setting.allowRead.argumentHelp) var allowRead: [String] = []
    @Option(name: .customLong(Setting.allowDispatch.name), help: Setting.allowDispatch.argumentHelp) var allowDispatch: [String] = []
    @Option(name: .customLong(Setting.allowAdmin.name), help: Setting.allowAdmin.argumentHelp) var allowAdmin: [String] = []

    /// The settings given on the command line, as text. A repeated allow-list flag adds entries.
    var values: [Setting: String] {
        var values: [Setting: String] = [:]
        for child in Mirror(reflecting: self).children {
            guard let label = child.label, let setting = Setting(propertyName: label) else { continue }
            switch child.value {
            case let option as Option<String?>:
                values[setting] = option.wrappedValue
            case let option as Option<[String]>:
                if !option.wrappedValue.isEmpty { values[setting] = option.wrappedValue.joined(separator: ",") }
            default:
                continue
            }
        }
        return values
    }

    /// The settings that have an option here, by the option's property name.
    /// `arguments` with `on` after a `--take-over` given without a value (`serve --take-over`):
    /// the setting takes on or off, as the others take theirs, and reads as a flag too.
    static func withFlagValues(_ arguments: [String]) -> [String] {
        var completed: [String] = []
        for (index, argument) in arguments.enumerated() {
            completed.append(argument)
            guard argument == Setting.takeOver.flag else { continue }
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            if next.map({ $0 != "on" && $0 != "off" }) ?? true { completed.append("on") }
        }
        return completed
    }

    static var optionSettings: [Setting] {
        Mirror(reflecting: DaemonCommandLine()).children.compactMap { $0.label.flatMap(Setting.init(propertyName:)) }
    }
}
