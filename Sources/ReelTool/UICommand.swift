import ArgumentParser
import Foundation
import Logging
import ReelClient
import ReelCore
import ReelJSON
import ReelProtocol
import ReelUI

/// `reel ui`: the whole history in a browser (docs/TIME-TRAVEL.md).
struct UICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Serve the time-travel page on 127.0.0.1 and open it in a browser.",
        discussion: """
            The first line of output is the page's URL; it carries a random token, and every \
            request without it is refused (401). The page reads and writes through this command, \
            live or offline like every command, so the daemon's access policy applies to it as to \
            you. Ctrl-C stops it.
            """
    )

    @OptionGroup var source: PageSourceOptions
    // Read by a transform, so argument-parser adds no "(default: 0)" beside the help's own.
    @Option(
        name: .customLong("port"), parsing: .unconditional, help: ArgumentHelp("The port on 127.0.0.1 (default: a free one).", valueName: "n"),
        transform: { Int(try NumberArgument.whole($0, "a port", minimum: 0, maximum: 65535)) }
    )
    var port: Int = 0
    @Flag(name: .customLong("no-browser"), help: "Print the URL without opening a browser.")
    var noBrowser = false
    @Option(
        name: .customLong("shadow-report"),
        help: ArgumentHelp("Show this report of `shadow` (its JSON output) beside the history, each divergence a seq to go to.", valueName: "file")
    )
    var shadowReport: String?

    func run() async throws {
        let context = ToolContext.current
        guard let assets = UIAssets.locate() else {
            throw ToolError(
                "the page's files are missing (Reel_ReelUI.resources beside \(context.programName), or share/reel/ui); reinstall, or set REEL_UI_ASSETS",
                exitStatus: ExitStatus.unavailable
            )
        }
        let report = try shadowReport.map { path throws(ToolError) -> JSONValue in
            let json = try InputReader.json(InputReader.readAll(path: path), what: "the shadow report \(path)")
            guard json["parts"]?.arrayValue != nil, json["same"]?.boolValue != nil else {
                throw ToolError("\(path) is not a report of `shadow --json` (no \"same\" and \"parts\")", exitStatus: ExitStatus.dataError)
            }
            return json
        }
        let store = try await source.open()
        let backend = SourceBackend(source: store)
        var logger = Logger(label: "reel-ui")
        logger.logLevel = .warning
        let server = TimeTravelServer(
            backend: backend, port: port, token: TimeTravelServer.makeToken(), assets: assets, logger: logger, shadowReport: report
        )
        let openBrowser = !noBrowser
        do {
            try await server.run { url in
                context.standardOutput.write(url + "\n")
                context.standardError.write("\(context.programName) ui: serving \(store.label); Ctrl-C stops\n")
                if openBrowser { Self.openBrowser(url, context: context) }
            }
        } catch {
            let address = port == 0 ? "a free port on 127.0.0.1" : "127.0.0.1:\(port)"
            var reason = SocketErrorText.listening(on: address, error)
            if SocketErrorText.errnoCode(of: error) == EADDRINUSE {
                reason += ": choose another with --port, or leave --port out for a free one"
            }
            throw ToolError("cannot serve the page: \(reason)", exitStatus: ExitStatus.unavailable)
        }
    }

    /// `xdg-open`, or `$BROWSER`; the URL is printed either way.
    private static func openBrowser(_ url: String, context: ToolContext) {
        let candidates = [ProcessInfo.processInfo.environment["BROWSER"], "/usr/bin/xdg-open"].compactMap { $0 }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: candidate)
            process.arguments = [url]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            if (try? process.run()) != nil { return }
        }
        context.standardError.write("no browser to open (xdg-open): open the URL above\n")
    }
}

/// The page's backend over the source a command opened: what `reel` does, the page does.
struct SourceBackend: TimeTravelBackend {
    let source: any StoreSource

    var label: String { source.label }
    var isLive: Bool { source is LiveSource }
    var historyPageSize: Int { source.historyPageSize }

    func mayDispatch() async -> Bool {
        guard let live = source as? LiveSource else { return false }
        // A daemon that predates `permissions` in hello: offer it, and show its refusal if any.
        return live.client.serverHello.permissions?.contains(Permission.dispatch.rawValue) ?? true
    }

    func call<M: ProtocolMethod>(_ method: M.Type, _ params: M.Params) async throws(UIError) -> M.Result {
        do {
            return try await source.call(method, params)
        } catch {
            if let refusal = error.refusal { throw UIError(refusal: refusal) }
            throw error.exitStatus == ExitStatus.unavailable ? .unavailable(error.message) : .failed(error.message)
        }
    }

    func seqs() async -> AsyncStream<UInt64> {
        let source = self.source
        return AsyncStream { continuation in
            let task = Task {
                guard let feed = try? await source.watch(path: JSONPointer(tokens: []), since: nil, mode: .actions, branch: nil) else {
                    continuation.finish()
                    return
                }
                continuation.yield(feed.seq)
                do {
                    for try await update in feed.updates { continuation.yield(update.seq) }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
