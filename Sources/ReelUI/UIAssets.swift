import Foundation
import Hummingbird
import NIOCore

/// The page's files (HTML, CSS, JavaScript), shipped as the package's resources and read once.
///
/// They are found, in order: in `$REEL_UI_ASSETS`; in the resource bundle SwiftPM puts beside the
/// executable (`Reel_ReelUI.resources`, a build); in `../share/reel/ui` from the executable (where
/// `Tools/install` puts them).
public struct UIAssets: Sendable {
    let files: [String: [UInt8]]
    /// Where they were read from.
    public let directory: String

    /// The files the page cannot do without; every other `.js`, `.css` or `.html` file beside them
    /// is served too (the page's scripts are several files).
    static let names = ["index.html", "app.css"]
    static let servedExtensions: Set<String> = ["html", "js", "css"]

    /// Reads the files; `nil` when none of the places holds them.
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) -> UIAssets? {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "reel").resolvingSymlinksInPath().deletingLastPathComponent()
        var candidates: [URL] = []
        if let directory = environment["REEL_UI_ASSETS"] { candidates.append(URL(fileURLWithPath: directory)) }
        if let main = Bundle.main.executableURL?.deletingLastPathComponent() {
            candidates.append(main.appendingPathComponent("Reel_ReelUI.resources/Resources"))
        }
        candidates.append(executable.appendingPathComponent("Reel_ReelUI.resources/Resources"))
        candidates.append(executable.appendingPathComponent("../share/reel/ui").standardizedFileURL)
        for directory in candidates {
            guard let listing = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            var files: [String: [UInt8]] = [:]
            for name in listing where servedExtensions.contains(String(name.split(separator: ".").last ?? "")) {
                if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) {
                    files[name] = Array(data)
                }
            }
            if names.allSatisfy({ files[$0] != nil }) { return UIAssets(files: files, directory: directory.path) }
        }
        return nil
    }

    /// The file names served, besides `/` (index.html).
    var servedNames: [String] { files.keys.sorted() }

    func response(for name: String) -> Response {
        guard let bytes = files[name] else {
            return Response(status: .notFound)
        }
        let type = switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        default: "text/css; charset=utf-8"
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: type, .cacheControl: "no-store",
                // Nothing but this page's own files and API: no inline script, no other origin.
                .contentSecurityPolicy: "default-src 'self'; connect-src 'self' ws://127.0.0.1:*; img-src 'self' data:; style-src 'self'; script-src 'self'",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
