import ArgumentParser
import ReelProtocol

/// The command line of `reeld`, declared with swift-argument-parser for its help text and its
/// refusal of unknown flags. Every option is optional text with no default here: values are
/// validated in one place for all sources by ``DaemonConfiguration/load(arguments:environment:identityResolver:)``,
/// and an option left out must fall through to the environment, the config file and the defaults.
struct DaemonCommandLine: ParsableCommand {
    private typealias Defaults = DaemonConfiguration.Defaults

    static let configuration = CommandConfiguration(
        commandName: "reeld",
        abstract: "Reel's daemon: an event-sourced state store shared by local processes over a Unix socket.",
        discussion: """
            Every setting can also come from an environment variable (the flag's name in capitals \
            with - as _ and the prefix REEL_, such as REEL_DATA_DIR) or from the config file (YAML, \
            or JSON when its name ends in .json; the flag's name as key, such as `data-dir: /var/lib/reel`). \
            A flag wins over the environment, which wins over the config file, which wins over the defaults.

            Under systemd (StateDirectory=, RuntimeDirectory=) the data directory defaults to \
            $STATE_DIRECTORY and the socket to $RUNTIME_DIRECTORY/reel.sock.

            Allow lists are comma-separated: a uid or user name, `self` (reeld's own user), \
            @GROUP (a gid or group name: peers whose primary group it is, or who are listed \
            members of it), `*` (anyone who can reach the socket), or `none`.

            reeld exits 0 after a graceful shutdown on SIGTERM or SIGINT, and with a one-line \
            reason and a non-zero status when it cannot start.
            """,
        version: ReelRelease.versionLine(program: "reeld")
    )

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("The data directory (default: \(Defaults.dataDirectory)).", valueName: "path"))
    var dataDir: String?

    @Option(name: .customLong("socket"), help: ArgumentHelp("The Unix socket (default: <data-dir>/\(Defaults.socketName)).", valueName: "path"))
    var socket: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("A config file, YAML or JSON (default: none).", valueName: "file"))
    var config: String?

    @Option(
        name: .customLong("checkpoint-every"),
        help: ArgumentHelp("Write a checkpoint every N actions; 0: only at shutdown (default: \(Defaults.checkpointEvery)).", valueName: "n")
    )
    var checkpointEvery: String?

    @Option(
        name: .customLong("checkpoint-every-bytes"),
        help: ArgumentHelp(
            "Also write a checkpoint once the actions since the last one take this much of the log, such as 4MiB; 0: count actions only (default: \(SettingValueParsers.formatBytes(Defaults.checkpointEveryBytes))).",
            valueName: "size"
        )
    )
    var checkpointEveryBytes: String?

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (default: \(Defaults.logLevel)).", valueName: "level")
    )
    var logLevel: String?

    @Option(
        name: .customLong("socket-mode"),
        help: ArgumentHelp("Octal mode of the socket, never world-writable (default: 0600, or 0660 with --socket-group).", valueName: "mode")
    )
    var socketMode: String?

    @Option(
        name: .customLong("socket-group"),
        help: ArgumentHelp("Share the socket with this group: directory 0750, socket 0660 (default: none).", valueName: "group")
    )
    var socketGroup: String?

    @Option(
        name: .customLong("max-line-bytes"),
        help: ArgumentHelp("The longest request line, such as 1048576 or 1MiB (default: \(SettingValueParsers.formatBytes(Defaults.maxLineBytes))).", valueName: "size")
    )
    var maxLineBytes: String?

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Connections at once (default: \(Defaults.maxConnections)).", valueName: "n"))
    var maxConnections: String?

    @Option(
        name: .customLong("event-loops"),
        help: ArgumentHelp("Threads that serve the connections, or 0 for one per core (default: 0).", valueName: "n")
    )
    var eventLoops: String?

    @Option(
        name: .customLong("max-subscriptions"),
        help: ArgumentHelp("Subscriptions per connection (default: \(Defaults.maxSubscriptionsPerConnection)).", valueName: "n")
    )
    var maxSubscriptions: String?

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp("Close a connection stalled this long in the middle of a line (default: \(Defaults.idleTimeout.components.seconds)).", valueName: "seconds")
    )
    var idleTimeout: String?

    @Option(
        name: .customLong("max-map-size"),
        help: ArgumentHelp("The LMDB map grows by itself up to this size (default: \(SettingValueParsers.formatBytes(Defaults.maxMapSize))).", valueName: "size")
    )
    var maxMapSize: String?

    @Option(
        name: .customLong("allow-read"),
        help: ArgumentHelp("Who may read and subscribe (default: \(Defaults.allowList)).", valueName: "list")
    )
    var allowRead: [String] = []

    @Option(name: .customLong("allow-dispatch"), help: ArgumentHelp("Who may dispatch (default: \(Defaults.allowList)).", valueName: "list"))
    var allowDispatch: [String] = []

    @Option(name: .customLong("allow-admin"), help: ArgumentHelp("Who may use admin methods such as stats (default: \(Defaults.allowList)).", valueName: "list"))
    var allowAdmin: [String] = []

    @Option(
        name: .customLong("metrics"),
        help: ArgumentHelp(
            "Serve Prometheus metrics at /metrics on HOST:PORT (such as 127.0.0.1:9464) or unix:PATH (default: off).",
            valueName: "address"
        )
    )
    var metrics: String?

    @Option(
        name: .customLong("shared-log"),
        help: ArgumentHelp(
            "Keep the log's order in PostgreSQL (postgres://user@host/db), shared by every reeld given the same URL; this data directory becomes a full local copy (default: off).",
            valueName: "url"
        )
    )
    var sharedLog: String?

    /// The settings given on the command line, as text. A repeated allow-list flag adds entries.
    var values: [Setting: String] {
        var values: [Setting: String] = [:]
        values[.dataDir] = dataDir
        values[.socket] = socket
        values[.config] = config
        values[.checkpointEvery] = checkpointEvery
        values[.checkpointEveryBytes] = checkpointEveryBytes
        values[.logLevel] = logLevel
        values[.socketMode] = socketMode
        values[.socketGroup] = socketGroup
        values[.maxLineBytes] = maxLineBytes
        values[.maxConnections] = maxConnections
        values[.maxSubscriptions] = maxSubscriptions
        values[.eventLoops] = eventLoops
        values[.idleTimeout] = idleTimeout
        values[.maxMapSize] = maxMapSize
        values[.metrics] = metrics
        values[.sharedLog] = sharedLog
        if !allowRead.isEmpty { values[.allowRead] = allowRead.joined(separator: ",") }
        if !allowDispatch.isEmpty { values[.allowDispatch] = allowDispatch.joined(separator: ",") }
        if !allowAdmin.isEmpty { values[.allowAdmin] = allowAdmin.joined(separator: ",") }
        return values
    }
}
