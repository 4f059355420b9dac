import ReelMetrics
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ReelStorage
import ReelStore

/// Every setting of `reeld`, resolved from (highest first) command-line flags, environment
/// variables, a config file, then defaults. Build one with
/// ``load(arguments:environment:identityResolver:)``.
///
/// Each setting is declared once, in ``Setting/table``: its flag `--NAME`, environment variable
/// `REEL_NAME` and config key `NAME`, its help and default, how it is read and how the start-up
/// log line shows it. `reeld --help`, the man page and docs/REFERENCE.md list them.
///
/// A config file (YAML, or JSON when its name ends in `.json`) uses the flag names as top-level
/// keys: `data-dir: /var/lib/reel`. Keys it does not know are refused, so a typo never goes
/// unnoticed. Allow lists may be a comma-separated string or a sequence.
///
/// ## Defaults under a service manager
///
/// With no `--data-dir`/`--socket` anywhere, `reeld` looks at the variables systemd sets for a
/// unit with `StateDirectory=` and `RuntimeDirectory=`: the data directory defaults to the first
/// entry of `$STATE_DIRECTORY` (such as `/var/lib/reel`), and the socket to
/// `reel.sock` in the first entry of `$RUNTIME_DIRECTORY` (such as `/run/reel/reel.sock`; for a
/// `systemctl --user` unit systemd puts that under `$XDG_RUNTIME_DIR`). Without those variables
/// the defaults are the documented `./reel-data` and `./reel-data/reel.sock`. `$XDG_RUNTIME_DIR` alone is
/// deliberately not used: it is set in every desktop login session, so honouring it would move
/// the socket of a plain `reeld` typed in a terminal away from where `reel` looks for it. Clients
/// do not see the unit's variables either: point them at a service's socket with `--socket` or
/// `REEL_SOCKET=/run/reel/reel.sock`.
public struct DaemonConfiguration: Sendable, Equatable {
    /// The data directory (LMDB environment, lock file).
    public var dataDirectory: String
    /// Where the Unix socket is bound.
    public var socketPath: String
    /// The config file read, if any.
    public var configFile: String?
    /// Write a checkpoint every this many actions (0: only at shutdown).
    public var checkpointEvery: UInt64
    /// Also write a checkpoint once the actions since the last one take this many bytes of the log
    /// (0: count actions only).
    public var checkpointEveryBytes: Int
    /// The level of the daemon's logs (stderr).
    public var logLevel: Logger.Level
    /// Modes and group of the socket and of the directory that holds it.
    public var socketPermissions: SocketPermissions
    /// The longest request line accepted, in bytes, not counting the newline.
    public var maxLineBytes: Int
    /// Connections accepted at once; one more is answered with error 1008 and closed.
    public var maxConnections: Int
    /// Subscriptions one connection may hold at once.
    public var maxSubscriptionsPerConnection: Int
    /// Threads that serve the connections (SwiftNIO event loops); `nil`: one per core, as
    /// SwiftNIO's shared group has (it counts the cores a container's CPU quota allows).
    public var eventLoops: Int?
    /// How long a connection may stall in the middle of a line before it is closed. A connection
    /// that is idle between lines (a subscriber waiting for updates) is never timed out.
    public var idleTimeout: Duration
    /// Keep the change index up to date (``StoreOptions/changeIndex``).
    public var changeIndex = true
    /// Start by taking over from the daemon serving the data directory (`--take-over`).
    public var takeOver = false
    /// The LMDB map grows by itself as the log grows, up to this size; then writes fail with
    /// error 1010 until the limit is raised and the daemon restarted.
    public var maxMapSize: Int
    /// Which peers may read, dispatch, use admin methods.
    public var accessPolicy: AccessPolicy
    /// Where the Prometheus metrics are served, if anywhere (off by default).
    public var metrics: MetricsAddress?
    /// The OpenTelemetry collector that dispatch and commit spans are sent to, over OTLP/HTTP
    /// (off by default).
    public var otlpEndpoint: String?
    /// The PostgreSQL URL of the shared log, if the log's order is kept there (off by default).
    /// It may carry a password: never log it as is (``redactedSharedLog``).
    public var sharedLog: String?
    /// Where each setting's value came from, by setting name (`data-dir`, `socket`, …).
    public var sources: [String: SettingSource]

    /// A configuration built in code, for embedding the daemon or for tests; every setting not
    /// given has its built-in default (the socket: `<dataDirectory>/reel.sock`; the policy:
    /// `self,root`). ``load(arguments:environment:identityResolver:)`` is what `reeld` uses.
    public init(
        dataDirectory: String = Defaults.dataDirectory,
        socketPath: String? = nil,
        configFile: String? = nil,
        checkpointEvery: UInt64 = Defaults.checkpointEvery,
        checkpointEveryBytes: Int = Defaults.checkpointEveryBytes,
        logLevel: Logger.Level = Defaults.logLevel,
        socketPermissions: SocketPermissions = SocketPermissions(),
        maxLineBytes: Int = Defaults.maxLineBytes,
        maxConnections: Int = Defaults.maxConnections,
        maxSubscriptionsPerConnection: Int = Defaults.maxSubscriptionsPerConnection,
        eventLoops: Int? = nil,
        idleTimeout: Duration = Defaults.idleTimeout,
        maxMapSize: Int = Defaults.maxMapSize,
        accessPolicy: AccessPolicy? = nil,
        metrics: MetricsAddress? = nil,
        sharedLog: String? = nil,
        sources: [String: SettingSource] = [:]
    ) {
        self.dataDirectory = dataDirectory
        self.socketPath = socketPath ?? (dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/") + Defaults.socketName
        self.configFile = configFile
        self.checkpointEvery = checkpointEvery
        self.checkpointEveryBytes = checkpointEveryBytes
        self.logLevel = logLevel
        self.socketPermissions = socketPermissions
        self.maxLineBytes = maxLineBytes
        self.maxConnections = maxConnections
        self.maxSubscriptionsPerConnection = maxSubscriptionsPerConnection
        self.eventLoops = eventLoops
        self.idleTimeout = idleTimeout
        self.maxMapSize = maxMapSize
        self.accessPolicy = accessPolicy ?? .ownerAndRoot(ownUID: UInt32(geteuid()))
        self.metrics = metrics
        self.sharedLog = sharedLog
        self.sources = sources
    }

    /// How to open the store: checkpoint interval and map size limit from this configuration.
    public var storeOptions: StoreOptions {
        var options = StoreOptions(checkpointEvery: checkpointEvery)
        options.checkpointEveryBytes = UInt64(checkpointEveryBytes)
        options.storage.maxMapSize = maxMapSize
        if options.storage.initialMapSize > maxMapSize { options.storage.initialMapSize = maxMapSize }
        // The whole journal at once: it then never grows while acknowledgements wait.
        options.storage.journalPreallocation = options.storage.journalCycleSize
        options.changeIndex = changeIndex
        return options
    }

    /// Every setting with its value and source, for one startup log line.
    public var loggingMetadata: Logger.Metadata {
        Logger.Metadata(uniqueKeysWithValues: Setting.declarations.map { declaration in
            (declaration.setting.name, "\(declaration.show(self)) (\(sources[declaration.setting.name] ?? .builtInDefault))")
        })
    }

    /// The shared log's URL with any password replaced by `***`, for logs.
    public var redactedSharedLog: String? {
        sharedLog.map { redactingPassword(inURL: $0) }
    }

    /// The allow list of `operation`, as the start-up log line shows it.
    func principals(_ operation: AccessPolicy.Operation) -> String {
        let list = accessPolicy.allowed[operation, default: []]
        return list.isEmpty ? "none" : list.map(\.description).joined(separator: ",")
    }
}

/// The permissions of the socket and of the directory that holds it.
///
/// The directory is the real barrier: a socket is reachable only through a directory its peer may
/// enter, and the socket's own mode is set (by ``SocketPlacement/applySocketPermissions(path:)``)
/// only just after `bind`. Others never get into the directory.
public struct SocketPermissions: Sendable, Equatable {
    /// Mode of the socket file: `0600`, or `0660` when shared with a group. Never world-writable.
    public var socketMode: UInt32
    /// The group the socket and a directory `reeld` creates for it are given, if any.
    public var groupID: UInt32?
    /// The group's name, for messages.
    public var groupName: String?

    public init(socketMode: UInt32 = 0o600, groupID: UInt32? = nil, groupName: String? = nil) {
        self.socketMode = socketMode
        self.groupID = groupID
        self.groupName = groupName
    }

    /// Mode of a directory created for the socket: `0700`, plus `0050` when the socket grants its
    /// group anything (the group may enter and list it, not create files in it).
    public var directoryMode: UInt32 {
        socketMode & 0o060 != 0 ? 0o750 : 0o700
    }

    /// "group reel" or "group 1001", for messages.
    var groupLabel: String {
        groupName.map { "group \($0)" } ?? groupID.map { "group \($0)" } ?? "no group"
    }
}
