import Foundation
import ReelTestSupport
import Testing

/// `Tools/install` into a temporary prefix, then everything used from there: the binaries, the
/// unit files (`systemd-analyze verify`), the sysusers.d and tmpfiles.d entries (applied to a
/// scratch root), the completions. The man pages need a build of the package, which cannot run
/// inside `swift test` (it holds the build directory): `.ci/run` installs with them.
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func installsIntoAPrefixAndWorksFromThere() async throws {
        let dir = try TemporaryDirectory()
        let prefix = dir.sub("prefix")
        let binaries = try PackageExecutable.url("reeld").deletingLastPathComponent().path
        let install = try await runCommand(
            Self.repository.appendingPathComponent("Tools/install"), ["--prefix", prefix, "--bin-path", binaries, "--no-manuals"]
        )
        #expect(install.status == 0, "\(install.errors)")
        #expect(install.output.contains("installed Reel"))
        for file in [
            "bin/reeld", "bin/reel", "lib/systemd/system/reeld.service", "lib/systemd/system/reeld.socket",
            "lib/sysusers.d/reel.conf", "lib/tmpfiles.d/reel.conf", "etc/reel/reeld.yaml", "share/doc/reel/reeld.example.yaml",
            "share/bash-completion/completions/reel", "share/bash-completion/completions/reeld",
            "share/zsh/site-functions/_reel", "share/fish/vendor_completions.d/reeld.fish",
            "share/reel/ui/index.html", "share/reel/ui/main.js", "share/reel/ui/log.js", "share/reel/ui/app.css",
        ] {
            #expect(FileManager.default.fileExists(atPath: "\(prefix)/\(file)"), "\(file) was not installed")
        }

        // The units name the installed binary and config, and systemd finds nothing wrong with them.
        let service = try String(contentsOfFile: "\(prefix)/lib/systemd/system/reeld.service", encoding: .utf8)
        #expect(service.contains("ExecStart=\(prefix)/bin/reeld --config \(prefix)/etc/reel/reeld.yaml"))
        #expect(service.contains("ExecReload=\(prefix)/bin/reeld --config \(prefix)/etc/reel/reeld.yaml --take-over"))
        let verify = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/systemd-analyze"),
            // (--man=no: the man pages are not installed here, see above.)
            ["verify", "--man=no", "\(prefix)/lib/systemd/system/reeld.socket", "\(prefix)/lib/systemd/system/reeld.service"]
        )
        #expect(verify.status == 0 && verify.errors.isEmpty && verify.output.isEmpty, "systemd-analyze: \(verify.errors)\(verify.output)")

        // The user, then the directories, on a scratch root.
        let root = dir.sub("root")
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        let sysusers = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/systemd-sysusers"), ["--root=\(root)", "\(prefix)/lib/sysusers.d/reel.conf"]
        )
        #expect(sysusers.status == 0, "\(sysusers.errors)")
        #expect(try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8).contains("reel:x:"))
        let tmpfiles = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/systemd-tmpfiles"), ["--root=\(root)", "--create", "\(prefix)/lib/tmpfiles.d/reel.conf"]
        )
        #expect(tmpfiles.status == 0, "\(tmpfiles.errors)")
        let state = try FileManager.default.attributesOfItem(atPath: root + "/var/lib/reel")
        #expect(state[.posixPermissions] as? Int == 0o700)

        // The installed programs, on their own.
        let version = try await runCommand(URL(fileURLWithPath: "\(prefix)/bin/reeld"), ["--version"])
        #expect(version.output.hasPrefix("reeld ") && version.output.contains("(protocol 1)"))
        let clientVersion = try await runCommand(URL(fileURLWithPath: "\(prefix)/bin/reel"), ["--version"])
        #expect(clientVersion.output == version.output.replacingOccurrences(of: "reeld ", with: "reel "), "\(clientVersion.output)")
        let data = dir.sub("data")
        let daemon = try SpawnedProcess("\(prefix)/bin/reeld", ["--config", "\(prefix)/etc/reel/reeld.yaml", "--data-dir", data])
        try await waitUntil("the installed reeld's socket", timeout: .seconds(10)) { SpawnedDaemon.accepts(data + "/reel.sock") }
        let reel = URL(fileURLWithPath: "\(prefix)/bin/reel")
        let dispatched = try await runCommand(reel, ["dispatch", "set", #"{"path":"/installed","value":true}"#, "--socket", data + "/reel.sock"])
        #expect(dispatched.status == 0, "\(dispatched.errors)")
        let read = try await runCommand(reel, ["get", "/installed", "--json", "--socket", data + "/reel.sock"])
        #expect(read.output.contains("true"), "\(read.output)\(read.errors)")
        // The installed `reel ui` finds its page in share/reel/ui.
        let ui = try RunningProgram(path: "\(prefix)/bin/reel", ["ui", "--no-browser", "--socket", data + "/reel.sock"])
        try await ui.waitForLines(1)
        let url = ui.printed.split(separator: "\n").first.map(String.init) ?? ""
        let port = try #require(url.firstMatch(of: #/127\.0\.0\.1:(\d+)/#).map { Int($0.1)! }, "reel ui printed \(ui.printed)")
        let token = url.split(separator: "=").last.map(String.init) ?? ""
        let page = try HTTPGet.request(.tcp(port: port), path: "/", headers: ["Authorization": "Bearer \(token)"])
        #expect(page.status == 200 && page.body.contains("main.js"))
        ui.signal(SIGINT)
        _ = try await ui.finish()
        #expect(try await daemon.stop() == 0)

        // The bash completion is a script bash can read, and it knows the commands.
        let completion = "\(prefix)/share/bash-completion/completions/reel"
        let syntax = try await runCommand(URL(fileURLWithPath: "/bin/bash"), ["-n", completion])
        #expect(syntax.status == 0, "\(syntax.errors)")
        #expect(try String(contentsOfFile: completion, encoding: .utf8).contains("bisect"))
    }

    @Test func anExistingConfigIsKept() async throws {
        let dir = try TemporaryDirectory()
        let prefix = dir.sub("prefix")
        try FileManager.default.createDirectory(atPath: prefix + "/etc/reel", withIntermediateDirectories: true)
        try "log-level: debug\n".write(toFile: prefix + "/etc/reel/reeld.yaml", atomically: true, encoding: .utf8)
        let binaries = try PackageExecutable.url("reeld").deletingLastPathComponent().path
        let install = try await runCommand(
            Self.repository.appendingPathComponent("Tools/install"), ["--prefix", prefix, "--bin-path", binaries, "--no-manuals"]
        )
        #expect(install.status == 0, "\(install.errors)")
        #expect(try String(contentsOfFile: prefix + "/etc/reel/reeld.yaml", encoding: .utf8) == "log-level: debug\n")
        #expect(install.errors.contains("kept"))
    }
}
