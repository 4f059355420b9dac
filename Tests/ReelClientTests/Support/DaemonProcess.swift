import Foundation
import ReelTestSupport

/// A real `reeld` process on a data directory and socket, adapted from ReeldTests' helper: the
/// client's reconnection tests stop one daemon and start another on the same data and socket.
final class DaemonProcess {
    let dataDirectory: String
    let socketPath: String
    private let process = Process()
    private let stderrPipe = Pipe()

    /// The `reeld` built next to this test bundle.
    static var executable: URL {
        get throws {
            var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent("reeld")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            throw DaemonError("no reeld executable near \(CommandLine.arguments[0]); build it with `swift build`")
        }
    }

    init(dataDirectory: String, socketPath: String) throws {
        self.dataDirectory = dataDirectory
        self.socketPath = socketPath
        process.executableURL = try Self.executable
        process.arguments = ["--data-dir", dataDirectory, "--socket", socketPath, "--log-level", "warning"]
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
    }

    /// Starts the daemon and waits until its socket accepts connections.
    func start() async throws {
        try process.run()
        for _ in 0..<500 {
            if !process.isRunning { throw DaemonError("reeld exited at start: \(stderr)") }
            if FileManager.default.fileExists(atPath: socketPath),
                (try? await TestConnection.open(socketPath: socketPath, { _ in true })) == true
            {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DaemonError("reeld did not open \(socketPath) within 10 s")
    }

    /// Sends a signal and waits for the process to end; returns its exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) async throws -> Int32 {
        kill(process.processIdentifier, signal)
        for _ in 0..<1_000 where process.isRunning {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard !process.isRunning else { throw DaemonError("reeld did not stop after signal \(signal)") }
        return process.terminationStatus
    }

    var stderr: String {
        String(decoding: stderrPipe.fileHandleForReading.availableData, as: UTF8.self)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

struct DaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
