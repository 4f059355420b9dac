import Foundation
import ReelDaemon
import Testing

/// Every bad value gets one line naming the setting, the value, where it came from and what was
/// expected.
struct DaemonConfigurationErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var setting: String
        var value: String
        var expected: String
        var testDescription: String { "\(setting)=\(value)" }
    }

    static let cases: [Case] = [
        Case(setting: "data-dir", value: "", expected: "expected a file path"),
        Case(setting: "socket", value: "/" + String(repeating: "s", count: 120), expected: "at most 107 bytes"),
        Case(setting: "checkpoint-every", value: "-1", expected: "whole number from 0"),
        Case(setting: "checkpoint-every", value: "ten", expected: "whole number from 0"),
        Case(setting: "log-level", value: "verbose", expected: "one of trace, debug, info, notice, warning, error, critical"),
        Case(setting: "socket-mode", value: "0666", expected: "not world-writable"),
        Case(setting: "socket-mode", value: "0689", expected: "octal permission mode"),
        Case(setting: "socket-mode", value: "04600", expected: "octal permission mode"),
        Case(setting: "socket-mode", value: "0060", expected: "lets the owner read and write"),
        Case(setting: "socket-group", value: "nosuchgroup", expected: "an existing group"),
        Case(setting: "checkpoint-every-bytes", value: "lots", expected: "a size in bytes"),
        Case(setting: "max-line-bytes", value: "12", expected: "a size in bytes from 64 bytes to 1 GiB"),
        Case(setting: "max-line-bytes", value: "2GiB", expected: "a size in bytes"),
        Case(setting: "max-line-bytes", value: "1MB!", expected: "a size in bytes"),
        Case(setting: "max-connections", value: "0", expected: "whole number from 1 to 1000000"),
        Case(setting: "max-subscriptions", value: "many", expected: "whole number from 0"),
        Case(setting: "idle-timeout", value: "0", expected: "a number of seconds from 0.001 to 86400"),
        Case(setting: "idle-timeout", value: "soon", expected: "a number of seconds"),
        Case(setting: "max-map-size", value: "1KiB", expected: "a size in bytes from 1 MiB"),
        Case(setting: "allow-read", value: "mallory", expected: "there is no user 'mallory'"),
        Case(setting: "allow-dispatch", value: "@nogroup", expected: "there is no group 'nogroup'"),
        Case(setting: "allow-admin", value: "self,,root", expected: "an empty entry"),
        Case(setting: "metrics", value: "localhost", expected: "HOST:PORT (such as 127.0.0.1:9464), unix:PATH, or off"),
        Case(setting: "metrics", value: "127.0.0.1:70000", expected: "HOST:PORT"),
        Case(setting: "metrics", value: "unix:", expected: "HOST:PORT"),
        Case(setting: "otlp-endpoint", value: "127.0.0.1:4318", expected: "an http:// or https:// URL, such as http://127.0.0.1:4318, or off"),
        Case(setting: "otlp-endpoint", value: "grpc://collector:4317", expected: "an http:// or https:// URL"),
    ]

    static func check(_ error: StartupError?, _ item: Case, source: String) {
        guard let error else { return }
        #expect(error.code == .invalidSetting)
        #expect(error.exitStatus == 78)
        let message = error.description
        #expect(!message.contains("\n"))
        #expect(message.hasPrefix(item.setting + " "), "\(message)")
        #expect(message.contains(source), "\(message)")
        #expect(message.contains(item.expected), "\(message)")
    }

    @Test(arguments: cases) func fromAFlag(_ item: Case) async {
        let error = await #expect(throws: StartupError.self) {
            // `--x=-1`, since `--x -1` reads as two flags; `--x ""`, since `--x=` reads as no value.
            let flags = item.value.hasPrefix("-") ? ["--\(item.setting)=\(item.value)"] : ["--\(item.setting)", item.value]
            return try await DaemonConfigurationTests.load(flags)
        }
        Self.check(error, item, source: "from flag --\(item.setting)")
    }

    @Test(arguments: cases) func fromTheEnvironment(_ item: Case) async {
        let variable = "REEL_" + item.setting.uppercased().replacingOccurrences(of: "-", with: "_")
        let error = await #expect(throws: StartupError.self) {
            try await DaemonConfigurationTests.load(environment: [variable: item.value])
        }
        Self.check(error, item, source: "from environment variable \(variable)")
    }

    @Test(arguments: cases) func fromTheConfigFile(_ item: Case) async throws {
        let dir = try TemporaryDirectory()
        let file = dir.sub("reeld.yaml")
        let escaped = item.value.replacingOccurrences(of: "'", with: "''")
        try "\(item.setting): '\(escaped)'\n".write(toFile: file, atomically: true, encoding: .utf8)
        let error = await #expect(throws: StartupError.self) {
            try await DaemonConfigurationTests.load(["--config", file])
        }
        Self.check(error, item, source: "from config file \(file), key \(item.setting)")
    }

    @Test func aGroupShutOutByTheModeIsRefused() async {
        let error = await #expect(throws: StartupError.self) {
            try await DaemonConfigurationTests.load(["--socket-group", "reel"], environment: ["REEL_SOCKET_MODE": "0600"])
        }
        #expect(error?.code == .invalidSetting)
        #expect(error?.description.contains("socket-group reel from flag --socket-group needs a socket-mode") == true)
        #expect(error?.description.contains("socket-mode is 0600 from environment variable REEL_SOCKET_MODE") == true)
    }

    @Test func configFileProblems() async throws {
        let dir = try TemporaryDirectory()
        func failure(_ contents: String?, name: String = "reeld.yaml") async -> StartupError? {
            let file = dir.sub(name)
            if let contents { try? contents.write(toFile: file, atomically: true, encoding: .utf8) }
            return await #expect(throws: StartupError.self) { try await DaemonConfigurationTests.load(["--config", file]) }
        }
        let missing = await failure(nil, name: "missing.yaml")
        #expect(missing?.code == .configFile)
        #expect(missing?.description == "config file \(dir.sub("missing.yaml")) (from flag --config) does not exist")

        let typo = await failure("data_dir: /x\n")
        #expect(typo?.code == .configFile)
        #expect(typo?.description.contains("unknown setting 'data_dir' (known settings: data-dir, socket,") == true)

        let nested = await failure("data-dir:\n  path: /x\n")
        #expect(nested?.description.contains("data-dir must be a value or a list of values, not a mapping") == true)

        let null = await failure("allow-admin:\n")
        #expect(null?.description.contains("allow-admin has no value") == true)

        let recursive = await failure("config: other.yaml\n")
        #expect(recursive?.description.contains("a config file cannot name another config file") == true)

        let notMapping = await failure("- a\n- b\n")
        #expect(notMapping?.description.contains("must be a mapping of settings") == true)

        // A file that does not parse: the line and column of the problem, in one line.
        let broken = await failure("log-level: info\ndata-dir: [unclosed\n  foo: bar\n")
        #expect(broken?.code == .configFile)
        #expect(broken?.description.contains("is not valid YAML: line 3, column 6: did not find expected ',' or ']' (while parsing a flow sequence, from line 2, column 11)") == true, "\(String(describing: broken))")
        #expect(broken?.description.contains("\n") == false)

        let badJSON = await failure("{\"log-level\": \"info\",\n \"data-dir\": }", name: "reeld.json")
        #expect(badJSON?.description.contains("is not valid JSON: line 2, column 14: ") == true, "\(String(describing: badJSON))")
        #expect(badJSON?.description.contains("\n") == false)

        let directory = await #expect(throws: StartupError.self) { try await DaemonConfigurationTests.load(["--config", dir.path]) }
        #expect(directory?.description.contains("is not a regular file") == true)
    }

    @Test func aListInsteadOfAValue() async throws {
        let dir = try TemporaryDirectory()
        try "max-connections: [1, 2]\n".write(toFile: dir.sub("reeld.yaml"), atomically: true, encoding: .utf8)
        let error = await #expect(throws: StartupError.self) {
            try await DaemonConfigurationTests.load(["--config", dir.sub("reeld.yaml")])
        }
        #expect(error?.description.contains("max-connections '1,2' from config file") == true)
    }
}
