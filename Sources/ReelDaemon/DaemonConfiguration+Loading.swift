import ReelMetrics
import ArgumentParser
import Configuration
import Logging
import ReelServer
import ReelStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DaemonConfiguration {
    /// The built-in defaults (the reference's, docs/REFERENCE.md).
    public enum Defaults {
        /// The documented default data directory (docs/REFERENCE.md).
        public static let dataDirectory = "./reel-data"
        /// The socket's name in the data directory (or in `$RUNTIME_DIRECTORY`).
        public static let socketName = "reel.sock"
        // The rest are documented on the settings of ``DaemonConfiguration``.
        public static let checkpointEvery: UInt64 = 10_000
        public static let checkpointEveryBytes = Int(StoreOptions.defaultCheckpointEveryBytes)
        public static let logLevel = Logger.Level.info
        // The server's own defaults, written once (ReelServer's `ServerConfiguration.Limits`).
        public static let maxLineBytes = ServerConfiguration.Limits().maxLineLength
        public static let maxConnections = ServerConfiguration.Limits().maxConnections
        public static let maxSubscriptionsPerConnection = ServerConfiguration.Limits().maxSubscriptionsPerConnection
        public static let idleTimeout = Duration.nanoseconds(ServerConfiguration.Limits().midLineTimeout.nanoseconds)
        public static let maxMapSize = 1 << 40
        public static let allowList = "self,root"
    }

    /// The usage text printed for `--help`.
    public static var helpText: String { DaemonCommandLine.helpMessage(columns: 100) }

    /// Resolves every setting from (highest first) the command line, the environment (`REEL_…`),
    /// the config file (`--config` / `REEL_CONFIG`) and the defaults.
    ///
    /// See ``DaemonConfiguration`` for the settings, and for the defaults taken from systemd's
    /// `$STATE_DIRECTORY` and `$RUNTIME_DIRECTORY`. Nothing is created or opened here except the
    /// config file, which is read.
    ///
    /// - Parameters:
    ///   - arguments: the whole command line, as `CommandLine.arguments`: the first element is the
    ///     program's name and is skipped.
    ///   - environment: the process environment, as `ProcessInfo.processInfo.environment`.
    ///   - identityResolver: where user and group names of the allow lists and `--socket-group`
    ///     are looked up.
    /// - Throws: ``StartupError``: `.helpRequested` for `--help`; `.usage` for an unknown flag or a
    ///   flag without its value; `.configFile` for a config file that is missing, malformed or has
    ///   unknown keys; `.invalidSetting` for a bad value, naming the setting and where it came from.
    public static func load(
        arguments: [String], environment: [String: String], identityResolver: IdentityResolver = .system
    ) async throws(StartupError) -> DaemonConfiguration {
        // The usage line and messages name the program running: `reeld`, or `reel-rpg serve`.
        let name = arguments.first.flatMap { $0.split(separator: "/").last.map(String.init) } ?? "reeld"
        let parsed = DaemonCommandLine.$programName.withValue(name) { () -> Result<DaemonCommandLine, StartupError> in
            do throws(StartupError) {
                return .success(try parseCommandLine(Array(arguments.dropFirst())))
            } catch {
                return .failure(error)
            }
        }
        let commandLine = try parsed.get()
        let flagValues = Dictionary(uniqueKeysWithValues: commandLine.values.map { setting, text in
            (AbsoluteConfigKey([setting.name]), ConfigValue(.string(text), isSecret: false))
        })
        let reader = SettingsReader([
            (InMemoryProvider(name: "command line", values: flagValues), .flags),
            (EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "reel"), .environment),
        ])
        var configFile: String?
        var resolution = SettingResolution(reader: reader, environment: environment, resolver: identityResolver)
        if let (text, source) = try reader.text(.config) {
            let path = try parse(.config, text, source, SettingValueParsers.path)
            if let provider = try await ConfigFile.provider(path: path, source: source) {
                resolution = SettingResolution(
                    reader: reader.appending(provider, .configFile(path: path)), environment: environment, resolver: identityResolver
                )
            }
            configFile = path
            resolution.sources[Setting.config.name] = source
        }
        return try resolution.configuration(configFile: configFile)
    }

    private static func parseCommandLine(_ arguments: [String]) throws(StartupError) -> DaemonCommandLine {
        do {
            return try DaemonCommandLine.parse(DaemonCommandLine.withFlagValues(arguments))
        } catch {
            if DaemonCommandLine.exitCode(for: error) == .success {
                // --help, --version, --generate-completion-script, and the --experimental-dump-help
                // that swift-argument-parser's generate-manual plugin asks for.
                var request = StartupError(.helpRequested, "information requested: print requestedOutput")
                request.requestedOutput = DaemonCommandLine.fullMessage(for: error)
                throw request
            }
            let message = DaemonCommandLine.message(for: error)
            throw StartupError(.usage, "\(message) (see \(DaemonCommandLine.programName) --help)")
        }
    }

    /// Parses a setting's text, or throws the one-line error naming the setting and its source.
    static func parse<T>(
        _ setting: Setting, _ text: String, _ source: SettingSource, _ parser: (String) -> Result<T, Expectation>
    ) throws(StartupError) -> T {
        switch parser(text) {
        case .success(let value): return value
        case .failure(let expectation):
            throw StartupError(.invalidSetting, "\(setting.name) \(quoted(text)) from \(source) is invalid: expected \(expectation.text)")
        }
    }

    static func quoted(_ text: String) -> String {
        let shown = text.count > 80 ? text.prefix(77) + "..." : Substring(text)
        return "'" + shown.replacingOccurrences(of: "\n", with: "\\n") + "'"
    }
}

/// Reads the settings one by one into a configuration, remembering where each came from: what
/// each ``SettingDeclaration`` of ``Setting/table`` resolves through.
final class SettingResolution {
    let reader: SettingsReader
    let environment: [String: String]
    let resolver: IdentityResolver
    var sources: [String: SettingSource] = [:]
    let ownUID = UInt32(geteuid())
    /// The configuration being built, every setting at its built-in default until resolved.
    var configuration = DaemonConfiguration()
    /// `--socket-group`, once resolved (the socket's mode defaults from it).
    private var group: IdentityResolver.Group?

    init(reader: SettingsReader, environment: [String: String], resolver: IdentityResolver) {
        self.reader = reader
        self.environment = environment
        self.resolver = resolver
    }

    /// Resolves every setting of the table, in its order.
    func configuration(configFile: String?) throws(StartupError) -> DaemonConfiguration {
        configuration.configFile = configFile
        for declaration in Setting.table {
            try declaration.resolve(self)
        }
        configuration.sources = sources
        return configuration
    }

    /// The setting's parsed value, or `fallback()` with its source when no provider has it.
    func value<T>(
        _ setting: Setting, _ parser: (String) -> Result<T, Expectation>,
        fallback: () -> (T, SettingSource)
    ) throws(StartupError) -> T {
        if let (text, source) = try reader.text(setting) {
            sources[setting.name] = source
            return try DaemonConfiguration.parse(setting, text, source, parser)
        }
        let (value, source) = fallback()
        sources[setting.name] = source
        return value
    }

    func value<T>(_ setting: Setting, _ parser: (String) -> Result<T, Expectation>, default value: T) throws(StartupError) -> T {
        try self.value(setting, parser) { (value, .builtInDefault) }
    }

    /// The first directory of a systemd directory variable (it may list several, separated by `:`).
    func serviceDirectory(_ variable: String) -> String? {
        guard let value = environment[variable], let first = value.split(separator: ":").first, !first.isEmpty else { return nil }
        return String(first)
    }

    /// `--socket`: by default in `$RUNTIME_DIRECTORY` under systemd, else in the data directory;
    /// no longer than a Unix socket's path may be.
    func resolveSocketPath() throws(StartupError) {
        typealias Defaults = DaemonConfiguration.Defaults
        let dataDirectory = configuration.dataDirectory
        let socketPath = try value(.socket, SettingValueParsers.path) {
            if let runtime = serviceDirectory("RUNTIME_DIRECTORY") {
                return (joined(runtime, Defaults.socketName), .serviceManager("RUNTIME_DIRECTORY"))
            }
            return (joined(dataDirectory, Defaults.socketName), sources[Setting.dataDir.name] ?? .builtInDefault)
        }
        let socketPathLimit = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
        if socketPath.utf8.count > socketPathLimit {
            throw StartupError(
                .invalidSetting,
                "socket \(DaemonConfiguration.quoted(socketPath)) from \(sources[Setting.socket.name]!) is invalid: "
                    + "a Unix socket path has at most \(socketPathLimit) bytes; choose a shorter --socket"
            )
        }
        configuration.socketPath = socketPath
    }

    func resolveSocketGroup() throws(StartupError) {
        group = try value(.socketGroup, { resolveGroup($0).map(Optional.some) }) { (nil, .builtInDefault) }
        configuration.socketPermissions = SocketPermissions(socketMode: 0o600, groupID: group?.gid, groupName: group?.name)
    }

    /// Mode defaults to 0600, or 0660 with a group; a group with a mode that shuts it out is refused.
    func resolveSocketMode() throws(StartupError) {
        let group = self.group
        let mode = try value(.socketMode, SettingValueParsers.socketMode) { (group == nil ? 0o600 : 0o660, .builtInDefault) }
        if let group, mode & 0o060 == 0 {
            throw StartupError(
                .invalidSetting,
                "socket-group \(group.name) from \(sources[Setting.socketGroup.name]!) needs a socket-mode that lets the group "
                    + "connect, such as 0660, but socket-mode is \(octal(mode)) from \(sources[Setting.socketMode.name]!)"
            )
        }
        configuration.socketPermissions.socketMode = mode
    }

    func resolveAllowList(_ setting: Setting, _ operation: AccessPolicy.Operation) throws(StartupError) {
        let ownUID = ownUID
        let resolver = resolver
        configuration.accessPolicy.allowed[operation] = try value(setting, { text in
            Result { () throws(AccessListError) in try AccessPolicy.parseList(text, ownUID: ownUID, resolver: resolver) }
                .mapError { Expectation("a list of uids, user names, self, @groups, * or none; \($0)") }
        }) {
            (try! AccessPolicy.parseList(DaemonConfiguration.Defaults.allowList, ownUID: ownUID, resolver: .rootOnly), .builtInDefault)
        }
    }

    private func resolveGroup(_ text: String) -> Result<IdentityResolver.Group, Expectation> {
        let name = text.trimmingCharacters(in: .whitespaces)
        if let gid = UInt32(name) {
            return .success(resolver.groupWithID(gid) ?? IdentityResolver.Group(name: name, gid: gid))
        }
        guard !name.isEmpty, let group = resolver.groupNamed(name) else {
            return .failure(Expectation("the name or gid of an existing group"))
        }
        return .success(group)
    }

    private func joined(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

extension IdentityResolver {
    /// Resolves only `root` (uid 0): for the built-in default list, which must not depend on the
    /// system's databases.
    static let rootOnly = IdentityResolver(
        userID: { $0 == "root" ? 0 : nil }, groupNamed: { _ in nil }, groupWithID: { _ in nil }
    )
}
