import Foundation

/// A fresh directory under the system's temporary directory, removed when the test is done.
public struct TemporaryDirectory: ~Copyable {
    public let path: String

    public init(_ name: String = "reel-test") throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(name)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    /// A path inside the directory (not created).
    public func sub(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
