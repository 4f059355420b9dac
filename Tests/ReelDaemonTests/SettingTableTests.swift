import Logging
@testable import ReelDaemon
import Testing

/// Each setting is declared once (`Setting.table`): the command line, `--help` (and so the man
/// page), the environment, the config file and the start-up log line all come from there.
struct SettingTableTests {
    @Test func everySettingHasOneDeclarationAndOneOption() {
        #expect(Setting.declarations.map(\.setting) == Setting.allCases)
        #expect(Set(Setting.table.map(\.setting)) == Set(Setting.allCases).subtracting([.config]))
        let options = DaemonCommandLine.optionSettings
        #expect(options.count == Setting.allCases.count, "options: \(options)")
        #expect(Set(options) == Set(Setting.allCases))
    }

    @Test func helpShowsEachSettingsDeclaration() {
        // ArgumentParser wraps the text: compare with runs of whitespace as one space.
        let help = DaemonConfiguration.helpText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for declaration in Setting.declarations {
            #expect(help.contains("--\(declaration.setting.name) <\(declaration.valueName)>"), "\(declaration.setting)")
            #expect(help.contains(declaration.helpText), "help lacks '\(declaration.helpText)'")
        }
    }

    @Test func everySettingComesFromItsFlagItsVariableAndItsKey() async throws {
        // One value per setting that differs from its default, as the table's parser reads it.
        let values: [Setting: String] = [
            .dataDir: "/tmp/reel-table", .socket: "/tmp/reel-table.sock", .checkpointEvery: "7", .checkpointEveryBytes: "2MiB",
            .logLevel: "debug", .socketMode: "0640", .maxLineBytes: "4KiB", .maxConnections: "9", .maxSubscriptions: "3",
            .eventLoops: "2", .idleTimeout: "5", .maxMapSize: "2GiB", .allowRead: "65534", .allowDispatch: "65534", .allowAdmin: "65534",
            .metrics: "127.0.0.1:9999", .sharedLog: "postgres://reel@127.0.0.1/reel", .changeIndex: "off", .socketGroup: "0",
            .takeOver: "on", .otlpEndpoint: "http://127.0.0.1:4318",
        ]
        #expect(Set(values.keys) == Set(Setting.table.map(\.setting)))
        let byFlags = try await DaemonConfiguration.load(
            arguments: ["reeld"] + values.flatMap { [$0.key.flag, $0.value] }, environment: [:]
        )
        let byEnvironment = try await DaemonConfiguration.load(
            arguments: ["reeld"], environment: Dictionary(uniqueKeysWithValues: values.map { ($0.key.environmentVariable, $0.value) })
        )
        let defaults = try await DaemonConfiguration.load(arguments: ["reeld"], environment: [:])
        for declaration in Setting.table {
            let name = declaration.setting.name
            #expect(declaration.show(byFlags) == declaration.show(byEnvironment), "\(name)")
            #expect(declaration.show(byFlags) != declaration.show(defaults), "\(name) kept its default: \(declaration.show(byFlags))")
            #expect(byFlags.sources[name] == .flag(declaration.setting.flag))
            #expect(byEnvironment.sources[name] == .environment(declaration.setting.environmentVariable))
        }
        // The start-up log line: every setting, with its value and where it came from.
        #expect(Set(byFlags.loggingMetadata.keys) == Set(Setting.allCases.map(\.name)))
        #expect(byFlags.loggingMetadata["max-line-bytes"] == "4 KiB (flag --max-line-bytes)")
    }
}
