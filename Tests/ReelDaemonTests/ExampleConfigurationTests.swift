import Foundation
import ReelDaemon
import Testing

/// ops/reeld.example.yaml stays loadable: as shipped (everything commented out) and with every
/// setting uncommented.
struct ExampleConfigurationTests {
    static let example = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ops/reeld.example.yaml").path

    @Test func asShippedItChangesNothing() async throws {
        let configuration = try await DaemonConfigurationTests.load(["--config", Self.example])
        #expect(configuration.dataDirectory == DaemonConfiguration.Defaults.dataDirectory)
        #expect(configuration.sources.values.allSatisfy { $0 == .builtInDefault || $0 == .flag("--config") })
    }

    @Test func everySettingIsThereAndValid() async throws {
        let text = try String(contentsOfFile: Self.example, encoding: .utf8)
        // A commented-out setting is `#key: value` (prose comments have a space after `#`).
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("#") && !line.hasPrefix("# ") && line.count > 1 && line.contains(":") ? line.dropFirst() : line
        }.joined(separator: "\n")
        let dir = try TemporaryDirectory()
        try uncommented.write(toFile: dir.sub("reeld.yaml"), atomically: true, encoding: .utf8)
        let configuration = try await DaemonConfigurationTests.load(["--config", dir.sub("reeld.yaml")])
        for setting in ["data-dir", "socket", "checkpoint-every", "log-level", "socket-mode", "socket-group", "max-line-bytes",
                        "max-connections", "max-subscriptions", "event-loops", "idle-timeout", "max-map-size", "allow-read", "allow-dispatch",
                        "allow-admin"] {
            #expect(configuration.sources[setting] == .configFile(path: dir.sub("reeld.yaml"), key: setting), "\(setting)")
        }
        #expect(configuration.dataDirectory == "/var/lib/reel")
        #expect(configuration.socketPermissions == SocketPermissions(socketMode: 0o660, groupID: 990, groupName: "reel"))
        #expect(configuration.accessPolicy.allows(.read, uid: 1002, gid: 100))
    }
}
