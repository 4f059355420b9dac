import Logging

/// One setting of `reeld`, declared once: its name (the flag `--NAME`, the config key `NAME`, the
/// environment variable `REEL_NAME`), what `--help` and the man page say of it and of its
/// default, how its text is read into ``DaemonConfiguration``, and how the start-up log line
/// shows it. ``Setting/table`` lists them in the order they are resolved.
struct SettingDeclaration: Sendable {
    let setting: Setting
    /// The value's name in `--help`: `path`, `n`, `size`…
    let valueName: String
    /// One sentence for `--help`, without the default.
    let help: String
    /// The default as `--help` shows it.
    let defaultText: String
    /// Reads the setting (from the flags, the environment, the config file or its default) into
    /// the configuration being built.
    let resolve: @Sendable (SettingResolution) throws(StartupError) -> Void
    /// The value as the start-up log line shows it.
    let show: @Sendable (DaemonConfiguration) -> String

    /// `--help`'s text: the sentence and the default.
    var helpText: String { "\(help) (default: \(defaultText))." }
}

extension Setting {
    /// Every setting but `config` (read first, since it says where the others may come from), in
    /// the order they are resolved: a setting whose default depends on another comes after it.
    static let table: [SettingDeclaration] = [
        .init(
            setting: .dataDir, valueName: "path", help: "The data directory",
            defaultText: "\(Defaults.dataDirectory), or $STATE_DIRECTORY under systemd",
            resolve: { r throws(StartupError) in
                r.configuration.dataDirectory = try r.value(.dataDir, SettingValueParsers.path) {
                    if let state = r.serviceDirectory("STATE_DIRECTORY") { return (state, .serviceManager("STATE_DIRECTORY")) }
                    return (Defaults.dataDirectory, .builtInDefault)
                }
            },
            show: { $0.dataDirectory }
        ),
        .init(
            setting: .socket, valueName: "path", help: "The Unix socket",
            defaultText: "<data-dir>/\(Defaults.socketName), or $RUNTIME_DIRECTORY/\(Defaults.socketName) under systemd",
            resolve: { r throws(StartupError) in try r.resolveSocketPath() },
            show: { $0.socketPath }
        ),
        .init(
            setting: .checkpointEvery, valueName: "n", help: "Write a checkpoint every N actions; 0: only at shutdown",
            defaultText: "\(Defaults.checkpointEvery)",
            resolve: { r throws(StartupError) in
                r.configuration.checkpointEvery = try r.value(
                    .checkpointEvery, { SettingValueParsers.integer($0, in: 0...UInt64(Int64.max)) }, default: Defaults.checkpointEvery
                )
            },
            show: { "\($0.checkpointEvery)" }
        ),
        .init(
            setting: .checkpointEveryBytes, valueName: "size",
            help: "Also write a checkpoint once the actions since the last one take this much of the log, such as 4MiB; 0: count actions only",
            defaultText: SettingValueParsers.formatBytes(Defaults.checkpointEveryBytes),
            resolve: { r throws(StartupError) in
                r.configuration.checkpointEveryBytes = try r.value(
                    .checkpointEveryBytes, { SettingValueParsers.byteCount($0, in: 0...(1 << 40)) }, default: Defaults.checkpointEveryBytes
                )
            },
            show: { SettingValueParsers.formatBytes($0.checkpointEveryBytes) }
        ),
        .init(
            setting: .logLevel, valueName: "level", help: "trace, debug, info, notice, warning, error or critical",
            defaultText: Defaults.logLevel.rawValue,
            resolve: { r throws(StartupError) in
                r.configuration.logLevel = try r.value(.logLevel, SettingValueParsers.logLevel, default: Defaults.logLevel)
            },
            show: { $0.logLevel.rawValue }
        ),
        .init(
            setting: .socketGroup, valueName: "group", help: "Share the socket with this group: directory 0750, socket 0660",
            defaultText: "none",
            resolve: { r throws(StartupError) in try r.resolveSocketGroup() },
            show: { $0.socketPermissions.groupName ?? "none" }
        ),
        .init(
            setting: .socketMode, valueName: "mode", help: "Octal mode of the socket, never world-writable",
            defaultText: "0600, or 0660 with --socket-group",
            resolve: { r throws(StartupError) in try r.resolveSocketMode() },
            show: { permissions in
                let mode = permissions.socketPermissions
                return "0" + String(mode.socketMode, radix: 8) + " (directory 0" + String(mode.directoryMode, radix: 8) + ")"
            }
        ),
        .init(
            setting: .maxLineBytes, valueName: "size", help: "The longest request line, such as 1048576 or 1MiB",
            defaultText: SettingValueParsers.formatBytes(Defaults.maxLineBytes),
            resolve: { r throws(StartupError) in
                r.configuration.maxLineBytes = try r.value(
                    .maxLineBytes, { SettingValueParsers.byteCount($0, in: 64...(1 << 30)) }, default: Defaults.maxLineBytes
                )
            },
            show: { SettingValueParsers.formatBytes($0.maxLineBytes) }
        ),
        .init(
            setting: .maxConnections, valueName: "n", help: "Connections at once", defaultText: "\(Defaults.maxConnections)",
            resolve: { r throws(StartupError) in
                r.configuration.maxConnections = try r.value(
                    .maxConnections, { SettingValueParsers.integer($0, in: 1...1_000_000) }, default: Defaults.maxConnections
                )
            },
            show: { "\($0.maxConnections)" }
        ),
        .init(
            setting: .maxSubscriptions, valueName: "n", help: "Subscriptions per connection",
            defaultText: "\(Defaults.maxSubscriptionsPerConnection)",
            resolve: { r throws(StartupError) in
                r.configuration.maxSubscriptionsPerConnection = try r.value(
                    .maxSubscriptions, { SettingValueParsers.integer($0, in: 0...1_000_000) }, default: Defaults.maxSubscriptionsPerConnection
                )
            },
            show: { "\($0.maxSubscriptionsPerConnection)" }
        ),
        .init(
            setting: .eventLoops, valueName: "n", help: "Threads that serve the connections, or 0 for one per core", defaultText: "0",
            resolve: { r throws(StartupError) in
                let loops = try r.value(.eventLoops, { SettingValueParsers.integer($0, in: 0...1_024) }, default: 0)
                r.configuration.eventLoops = loops == 0 ? nil : loops
            },
            show: { $0.eventLoops.map { "\($0)" } ?? "one per core" }
        ),
        .init(
            setting: .idleTimeout, valueName: "seconds", help: "Close a connection stalled this long in the middle of a line",
            defaultText: "\(Defaults.idleTimeout.components.seconds)",
            resolve: { r throws(StartupError) in
                r.configuration.idleTimeout = try r.value(
                    .idleTimeout, { SettingValueParsers.seconds($0, in: 0.001...86_400) }, default: Defaults.idleTimeout
                )
            },
            show: { "\($0.idleTimeout)" }
        ),
        .init(
            setting: .maxMapSize, valueName: "size", help: "The LMDB map grows by itself up to this size",
            defaultText: SettingValueParsers.formatBytes(Defaults.maxMapSize),
            resolve: { r throws(StartupError) in
                r.configuration.maxMapSize = try r.value(
                    .maxMapSize, { SettingValueParsers.byteCount($0, in: (1 << 20)...(1 << 50)) }, default: Defaults.maxMapSize
                )
            },
            show: { SettingValueParsers.formatBytes($0.maxMapSize) }
        ),
        .init(
            setting: .allowRead, valueName: "list", help: "Who may read and subscribe", defaultText: Defaults.allowList,
            resolve: { r throws(StartupError) in try r.resolveAllowList(.allowRead, .read) },
            show: { $0.principals(.read) }
        ),
        .init(
            setting: .allowDispatch, valueName: "list", help: "Who may dispatch", defaultText: Defaults.allowList,
            resolve: { r throws(StartupError) in try r.resolveAllowList(.allowDispatch, .dispatch) },
            show: { $0.principals(.dispatch) }
        ),
        .init(
            setting: .allowAdmin, valueName: "list", help: "Who may use admin methods such as stats", defaultText: Defaults.allowList,
            resolve: { r throws(StartupError) in try r.resolveAllowList(.allowAdmin, .admin) },
            show: { $0.principals(.admin) }
        ),
        .init(
            setting: .metrics, valueName: "address",
            help: "Serve Prometheus metrics at /metrics on HOST:PORT (such as 127.0.0.1:9464) or unix:PATH", defaultText: "off",
            resolve: { r throws(StartupError) in
                r.configuration.metrics = try r.value(.metrics, SettingValueParsers.metricsAddress) { (nil, .builtInDefault) }
            },
            show: { $0.metrics.map(\.description) ?? "off" }
        ),
        .init(
            setting: .otlpEndpoint, valueName: "url",
            help: "Send the spans of dispatches and commits to an OpenTelemetry collector over OTLP/HTTP at this base URL (such as http://127.0.0.1:4318); the OTEL_* variables refine it",
            defaultText: "off",
            resolve: { r throws(StartupError) in
                r.configuration.otlpEndpoint = try r.value(.otlpEndpoint, SettingValueParsers.httpURL) { (nil, .builtInDefault) }
            },
            show: { $0.otlpEndpoint ?? "off" }
        ),
        .init(
            setting: .sharedLog, valueName: "url",
            help: "Keep the log's order in PostgreSQL (postgres://user@host/db), shared by every daemon given the same URL; this data directory becomes a full local copy",
            defaultText: "off",
            resolve: { r throws(StartupError) in
                r.configuration.sharedLog = try r.value(.sharedLog, SettingValueParsers.sharedLogURL) { (nil, .builtInDefault) }
            },
            show: { $0.redactedSharedLog ?? "off" }
        ),
        .init(
            setting: .changeIndex, valueName: "on|off",
            help: "Keep the change index (which actions changed which paths: history by path, blame); off, those replay the log",
            defaultText: "on",
            resolve: { r throws(StartupError) in
                r.configuration.changeIndex = try r.value(.changeIndex, SettingValueParsers.onOff, default: true)
            },
            show: { $0.changeIndex ? "on" : "off" }
        ),
        .init(
            setting: .takeOver, valueName: "on|off",
            help: "Start beside the daemon serving this data directory, fold its history with these reducers, then take its socket over without downtime (`--take-over` alone is on)",
            defaultText: "off",
            resolve: { r throws(StartupError) in
                r.configuration.takeOver = try r.value(.takeOver, SettingValueParsers.onOff, default: false)
            },
            show: { $0.takeOver ? "on" : "off" }
        ),
    ]

    /// The declaration of `config`, which is read before the others.
    static let configDeclaration = SettingDeclaration(
        setting: .config, valueName: "file", help: "A config file, YAML or JSON", defaultText: "none",
        resolve: { _ throws(StartupError) in }, show: { $0.configFile ?? "none" }
    )

    /// Every declaration, `config` first, in the order `--help` lists them.
    static var declarations: [SettingDeclaration] {
        let resolved = Dictionary(uniqueKeysWithValues: ([configDeclaration] + table).map { ($0.setting, $0) })
        return allCases.compactMap { resolved[$0] }
    }

    /// This setting's declaration.
    var declaration: SettingDeclaration {
        Self.declarations.first { $0.setting == self }!
    }

    private typealias Defaults = DaemonConfiguration.Defaults
}
