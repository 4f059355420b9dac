import Foundation

/// A fresh directory under the system's temporary directory, removed when the test is done.
/// (Like ReelTestSupport's, kept here so that these tests need nothing but the daemon library.)
struct TemporaryDirectory: ~Copyable {
    let path: String

    init(_ name: String = "reeld-test") throws {
        // Short names: a Unix socket path inside must stay under 108 bytes.
        let url = URL(fileURLWithPath: "/tmp", isDirectory: true)
            .appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    /// A path inside the directory (not created).
    func sub(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
