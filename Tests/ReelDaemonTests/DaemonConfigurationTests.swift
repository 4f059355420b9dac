import Foundation
import Logging
import ReelDaemon
import ReelMetrics
import ReelProtocol
import Testing

/// Resolving settings: defaults, precedence of the sources, config files, systemd's variables.
struct DaemonConfigurationTests {
    static let resolver = IdentityResolver(
        userID: { ["root": 0, "alice": 1001, "bob": 1002][$0] },
        groupNamed: { ["reel": IdentityResolver.Group(name: "reel", gid: 990, memberUIDs: [1002])][$0] },
        groupWithID: { $0 == 990 ? IdentityResolver.Group(name: "reel", gid: 990, memberUIDs: [1002]) : nil }
    )

    static func load(_ flags: [String] = [], environment: [String: String] = [:]) async throws(StartupError) -> DaemonConfiguration {
        try await DaemonConfiguration.load(arguments: ["reeld"] + flags, environment: environment, identityResolver: resolver)
    }

    @Test func noArgumentsGivesSpecDefaults() async throws {
        let configuration = try await Self.load()
        #expect(configuration.dataDirectory == "./reel-data")
        #expect(configuration.socketPath == "./reel-data/reel.sock")
        #expect(configuration.configFile == nil)
        #expect(configuration.checkpointEvery == 10_000)
        #expect(configuration.logLevel == .info)
        #expect(configuration.socketPermissions == SocketPermissions(socketMode: 0o600))
        #expect(configuration.socketPermissions.directoryMode == 0o700)
        #expect(configuration.maxLineBytes == 1 << 20)
        #expect(configuration.maxConnections == 256)
        #expect(configuration.maxSubscriptionsPerConnection == 64)
        #expect(configuration.idleTimeout == .seconds(30))
        #expect(configuration.maxMapSize == 1 << 40)
        #expect(configuration.storeOptions.checkpointEvery == 10_000)
        #expect(configuration.checkpointEveryBytes == 4 << 20)
        #expect(configuration.storeOptions.checkpointEveryBytes == 4 << 20)
        #expect(configuration.storeOptions.storage.maxMapSize == 1 << 40)
        // The daemon's journal is allocated whole: it never grows while acknowledgements wait.
        #expect(configuration.storeOptions.storage.journalPreallocation == configuration.storeOptions.storage.journalCycleSize)
        let own = UInt32(geteuid())
        for operation in AccessPolicy.Operation.allCases {
            #expect(configuration.accessPolicy.allows(operation, uid: own, gid: 4242))
            #expect(configuration.accessPolicy.allows(operation, uid: 0, gid: 0))
            #expect(!configuration.accessPolicy.allows(operation, uid: 54321, gid: 54321))
        }
        #expect(configuration.sources["data-dir"] == .builtInDefault)
        #expect(configuration.loggingMetadata["data-dir"] == "./reel-data (default)")
    }

    @Test func theSocketFollowsTheDataDirectory() async throws {
        let configuration = try await Self.load(["--data-dir", "/srv/reel/"])
        #expect(configuration.socketPath == "/srv/reel/reel.sock")
        #expect(configuration.sources["socket"] == .flag("--data-dir"))
    }

    @Test func flagBeatsEnvironmentBeatsFileBeatsDefault() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.yaml")
        try """
            # every source sets some of these
            data-dir: /from/file
            checkpoint-every: 30
            log-level: error
            max-connections: 3
            max-subscriptions: 7
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = [
            "REEL_CONFIG": file, "REEL_DATA_DIR": "/from/env", "REEL_CHECKPOINT_EVERY": "20", "REEL_LOG_LEVEL": "warning",
        ]
        let configuration = try await Self.load(["--data-dir", "/from/flag", "--max-line-bytes=2048"], environment: environment)
        #expect(configuration.dataDirectory == "/from/flag")
        #expect(configuration.sources["data-dir"] == .flag("--data-dir"))
        #expect(configuration.checkpointEvery == 20)
        #expect(configuration.sources["checkpoint-every"] == .environment("REEL_CHECKPOINT_EVERY"))
        #expect(configuration.logLevel == .warning)
        #expect(configuration.maxConnections == 3)
        #expect(configuration.sources["max-connections"] == .configFile(path: file, key: "max-connections"))
        #expect(configuration.maxSubscriptionsPerConnection == 7)
        #expect(configuration.maxLineBytes == 2048)
        #expect(configuration.idleTimeout == .seconds(30))
        #expect(configuration.sources["idle-timeout"] == .builtInDefault)
        #expect(configuration.configFile == file)
        #expect(configuration.sources["config"] == .environment("REEL_CONFIG"))

        let withoutFlags = try await Self.load(environment: environment)
        #expect(withoutFlags.dataDirectory == "/from/env")
        #expect(withoutFlags.socketPath == "/from/env/reel.sock")
        let fileOnly = try await Self.load(["--config", file])
        #expect(fileOnly.dataDirectory == "/from/file")
        #expect(fileOnly.checkpointEvery == 30)
        #expect(fileOnly.logLevel == .error)
        #expect(fileOnly.sources["config"] == .flag("--config"))
    }

    @Test func theConfigFlagBeatsTheConfigVariable() async throws {
        let dir = try TemporaryDirectory()
        try "checkpoint-every: 1".write(toFile: dir.sub("a.yaml"), atomically: true, encoding: .utf8)
        try "checkpoint-every: 2".write(toFile: dir.sub("b.yaml"), atomically: true, encoding: .utf8)
        let configuration = try await Self.load(["--config", dir.sub("a.yaml")], environment: ["REEL_CONFIG": dir.sub("b.yaml")])
        #expect(configuration.checkpointEvery == 1)
    }

    @Test func everySettingFromAYAMLFile() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.yaml")
        try """
            data-dir: /var/lib/reel
            socket: /run/reel/reel.sock
            checkpoint-every: 5_000
            checkpoint-every-bytes: 16MiB
            log-level: DEBUG
            socket-mode: 0660
            socket-group: reel
            max-line-bytes: 64KiB
            max-connections: 10
            max-subscriptions: 0
            idle-timeout: 2.5
            max-map-size: 8GiB
            allow-read: [self, "@reel", 1001]
            allow-dispatch: alice, self
            allow-admin: none
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try await Self.load(["--config", file])
        #expect(configuration.dataDirectory == "/var/lib/reel")
        #expect(configuration.socketPath == "/run/reel/reel.sock")
        #expect(configuration.checkpointEvery == 5_000)
        #expect(configuration.storeOptions.checkpointEveryBytes == 16 << 20)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.socketPermissions == SocketPermissions(socketMode: 0o660, groupID: 990, groupName: "reel"))
        #expect(configuration.socketPermissions.directoryMode == 0o750)
        #expect(configuration.maxLineBytes == 64 << 10)
        #expect(configuration.maxConnections == 10)
        #expect(configuration.maxSubscriptionsPerConnection == 0)
        #expect(configuration.idleTimeout == .milliseconds(2500))
        #expect(configuration.maxMapSize == 8 << 30)
        let policy = configuration.accessPolicy
        #expect(policy.allows(.read, uid: 1002, gid: 100))  // listed member of reel
        #expect(policy.allows(.read, uid: 5555, gid: 990))  // primary group reel
        #expect(policy.allows(.read, uid: 1001, gid: 100))
        #expect(policy.allows(.dispatch, uid: 1001, gid: 100))
        #expect(!policy.allows(.dispatch, uid: 1002, gid: 990))
        #expect(!policy.allows(.admin, uid: 0, gid: 0))
        #expect(!policy.allows(.admin, uid: UInt32(geteuid()), gid: 0))
    }

    @Test func aJSONFileWithNumbersAndLists() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.json")
        try """
            {"data-dir": "/d", "checkpoint-every": 42, "idle-timeout": 0.5, "allow-read": ["alice", "0"], "allow-admin": [1001, 0], "socket-mode": "0640"}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try await Self.load(["--config", file])
        #expect(configuration.dataDirectory == "/d")
        #expect(configuration.checkpointEvery == 42)
        #expect(configuration.idleTimeout == .milliseconds(500))
        #expect(configuration.socketPermissions.socketMode == 0o640)
        #expect(configuration.accessPolicy.allowed[.read] == [.user(uid: 1001), .user(uid: 0)])
        #expect(configuration.accessPolicy.allowed[.admin] == [.user(uid: 1001), .user(uid: 0)])
    }

    @Test func aFileOfOnlyCommentsSetsNothing() async throws {
        let dir = try TemporaryDirectory()
        try "# data-dir: /nowhere\n".write(toFile: dir.sub("empty.yaml"), atomically: true, encoding: .utf8)
        let configuration = try await Self.load(["--config", dir.sub("empty.yaml")])
        #expect(configuration.dataDirectory == "./reel-data")
        #expect(configuration.configFile == dir.sub("empty.yaml"))
    }

    @Test func systemdDirectoriesAreTheDefaultsUnderAServiceManager() async throws {
        let environment = ["STATE_DIRECTORY": "/var/lib/reel:/var/lib/other", "RUNTIME_DIRECTORY": "/run/reel"]
        let configuration = try await Self.load(environment: environment)
        #expect(configuration.dataDirectory == "/var/lib/reel")
        #expect(configuration.socketPath == "/run/reel/reel.sock")
        #expect(configuration.sources["data-dir"] == .serviceManager("STATE_DIRECTORY"))
        #expect(configuration.sources["socket"] == .serviceManager("RUNTIME_DIRECTORY"))

        let stateOnly = try await Self.load(environment: ["STATE_DIRECTORY": "/var/lib/reel"])
        #expect(stateOnly.socketPath == "/var/lib/reel/reel.sock")
        let explicit = try await Self.load(["--socket", "/tmp/x.sock"], environment: environment)
        #expect(explicit.socketPath == "/tmp/x.sock")
        #expect(explicit.dataDirectory == "/var/lib/reel")
        // A desktop session's XDG_RUNTIME_DIR alone does not move the socket.
        let desktop = try await Self.load(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(desktop.socketPath == "./reel-data/reel.sock")
    }

    @Test func aSocketGroupDefaultsTheModeTo0660() async throws {
        let configuration = try await Self.load(["--socket-group", "reel"])
        #expect(configuration.socketPermissions == SocketPermissions(socketMode: 0o660, groupID: 990, groupName: "reel"))
        let numeric = try await Self.load(["--socket-group", "4321"])
        #expect(numeric.socketPermissions.groupID == 4321)
    }

    @Test func repeatedAllowFlagsAddUp() async throws {
        let configuration = try await Self.load(["--allow-dispatch", "alice", "--allow-dispatch", "@reel,bob"])
        #expect(configuration.accessPolicy.allowed[.dispatch] == [.user(uid: 1001), .group(gid: 990, memberUIDs: [1002]), .user(uid: 1002)])
    }

    @Test func helpIsNotAFailure() async throws {
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--help"]) }
        #expect(error?.code == .helpRequested)
        #expect(error?.exitStatus == 0)
        let help = DaemonConfiguration.helpText
        for flag in ["--data-dir", "--socket", "--config", "--checkpoint-every", "--log-level", "--socket-mode", "--socket-group",
                     "--max-line-bytes", "--max-connections", "--max-subscriptions", "--event-loops", "--idle-timeout", "--max-map-size",
                     "--allow-read", "--allow-dispatch", "--allow-admin", "--metrics", "--shared-log", "REEL_DATA_DIR", "STATE_DIRECTORY"] {
            #expect(help.contains(flag), "help lacks \(flag)")
        }
    }

    @Test func eventLoopsAreOnePerCoreUnlessACountIsGiven() async throws {
        let byDefault = try await Self.load()
        #expect(byDefault.eventLoops == nil)
        #expect(byDefault.loggingMetadata["event-loops"] == "one per core (default)")
        #expect(try await Self.load(["--event-loops", "1"]).eventLoops == 1)
        #expect(try await Self.load(["--event-loops", "0"]).eventLoops == nil)
        #expect(try await Self.load(environment: ["REEL_EVENT_LOOPS": "3"]).eventLoops == 3)
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--event-loops", "many"]) }
        #expect(error?.code == .invalidSetting)
        #expect(error?.message.contains("event-loops") == true)
    }

    @Test func metricsAreOffUnlessAnAddressIsGiven() async throws {
        #expect(try await Self.load().metrics == nil)
        #expect(try await Self.load(["--metrics", "127.0.0.1:9464"]).metrics == .tcp(host: "127.0.0.1", port: 9464))
        #expect(try await Self.load(["--metrics", "[::1]:0"]).metrics == .tcp(host: "::1", port: 0))
        #expect(try await Self.load(environment: ["REEL_METRICS": "unix:/run/reel/metrics.sock"]).metrics == .unix(path: "/run/reel/metrics.sock"))
        let off = try await Self.load(["--metrics", "off"], environment: ["REEL_METRICS": "127.0.0.1:1"])
        #expect(off.metrics == nil)
        #expect(off.loggingMetadata["metrics"] == "off (flag --metrics)")
    }

    @Test func theSharedLogComesFromAFlagTheEnvironmentOrTheConfigFileAndHidesItsPassword() async throws {
        #expect(try await Self.load().sharedLog == nil)
        let url = "postgres://reel:s3cret@db.example:5432/reel"
        let fromFlag = try await Self.load(["--shared-log", url])
        #expect(fromFlag.sharedLog == url)
        #expect(fromFlag.redactedSharedLog == "postgres://reel:***@db.example:5432/reel")
        #expect(fromFlag.loggingMetadata["shared-log"] == "postgres://reel:***@db.example:5432/reel (flag --shared-log)")
        #expect("\(fromFlag.loggingMetadata)".contains("s3cret") == false)
        let inTheQuery = try await Self.load(["--shared-log", "postgres://reel@db/reel?sslmode=require&password=s3cret"])
        #expect(inTheQuery.redactedSharedLog == "postgres://reel@db/reel?sslmode=require&password=***")
        #expect("\(inTheQuery.loggingMetadata)".contains("s3cret") == false)
        let fromEnvironment = try await Self.load(environment: ["REEL_SHARED_LOG": "postgresql://reel@db/reel"])
        #expect(fromEnvironment.sharedLog == "postgresql://reel@db/reel")
        #expect(fromEnvironment.sources["shared-log"] == .environment("REEL_SHARED_LOG"))
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.yaml")
        try "shared-log: postgres://reel@from-file/reel\n".write(toFile: file, atomically: true, encoding: .utf8)
        let fromFile = try await Self.load(["--config", file])
        #expect(fromFile.sharedLog == "postgres://reel@from-file/reel")
        #expect(fromFile.sources["shared-log"] == .configFile(path: file, key: "shared-log"))
        #expect(try await Self.load(["--shared-log", "off"], environment: ["REEL_SHARED_LOG": url]).sharedLog == nil)
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--shared-log", "mysql://db/reel"]) }
        #expect(error?.code == .invalidSetting)
        #expect(error?.description.contains("postgres://") == true)
    }

    @Test func versionIsOneLineWithTheProtocol() async throws {
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--version"]) }
        #expect(error?.code == .helpRequested)
        #expect(error?.requestedOutput == "reeld \(ReelRelease.version) (protocol 1)")
    }

    @Test func completionScriptsAreGenerated() async throws {
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--generate-completion-script", "bash"]) }
        #expect(error?.code == .helpRequested)
        let script = try #require(error?.requestedOutput)
        #expect(script.contains("--checkpoint-every-bytes"))
        #expect(script.contains("complete"))
    }

    @Test func unknownFlagsAreUsageErrors() async throws {
        let error = await #expect(throws: StartupError.self) { try await Self.load(["--data-dri", "/x"]) }
        #expect(error?.code == .usage)
        #expect(error?.exitStatus == 64)
        #expect(error?.description.contains("--data-dri") == true)
        #expect(error?.description.contains("\n") == false)
        let missing = await #expect(throws: StartupError.self) { try await Self.load(["--socket"]) }
        #expect(missing?.code == .usage)
    }
}

extension DaemonConfigurationTests {
    @Test func builtInCodeMatchesTheLoadedDefaults() async throws {
        var loaded = try await Self.load(["--data-dir", "/srv/reel"])
        loaded.sources = [:]
        #expect(DaemonConfiguration(dataDirectory: "/srv/reel") == loaded)
    }
}
