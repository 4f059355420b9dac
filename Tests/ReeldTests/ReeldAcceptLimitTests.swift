import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// A daemon out of file descriptors: it says so, pauses accepting for a second at a time rather
/// than trying again at once (the socket stays readable: a loop spinning on a core, and a log line
/// at each turn), and accepts again once descriptors are free.
@Suite(.timeLimit(.minutes(1)), .heavy) struct ReeldAcceptLimitTests {
    static let refusal = "cannot accept connections: Too many open files"

    @Test func outOfDescriptorsItSaysSoPausesAndAcceptsAgain() async throws {
        let dir = try TemporaryDirectory()
        let daemon = SpawnedDaemon(dataDirectory: dir.sub("data"), socketPath: dir.sub("reel.sock"))
        try await daemon.start()
        let descriptors = { try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count }
        let limit = try descriptors() + 2
        try limitOpenFiles(of: daemon.pid, to: limit)
        // The kernel queues these; the daemon can accept two, then no more.
        var clients: [Int32] = []
        for _ in 0..<12 { clients.append(try RawSocket.connectUnix(daemon.socketPath)) }
        try await waitUntil("the daemon to use every descriptor it may") { try descriptors() >= limit }
        let full = ContinuousClock.now
        // Once descriptors are free again, connections are accepted and served (after the pause).
        for client in clients { close(client) }
        let answer = try await TestConnection.open(socketPath: daemon.socketPath) { connection throws in
            try await connection.request(1, "hello", ["client": "after"])
        }
        #expect(answer["result"]?["protocol"] == 1)
        #expect(try await daemon.stop() == 0)
        let seconds = (ContinuousClock.now - full) / .seconds(1)
        // Said, and tried again once a second at most, however long that took on this machine
        // (the standard error read after the daemon's end: reading it meanwhile would block).
        let refusals = daemon.stderr.components(separatedBy: Self.refusal).count - 1
        #expect(refusals >= 1)
        #expect(Double(refusals) <= seconds + 2, "\(refusals) refusals in \(seconds) s")
    }
}

/// Sets the soft and hard limit on open files of process `pid` (`prlimit(2)`, a GNU extension
/// that Swift's Glibc module leaves out, so looked up by name).
private func limitOpenFiles(of pid: Int32, to count: Int) throws {
    typealias PRLimit = @convention(c) (pid_t, Int32, UnsafePointer<rlimit>?, UnsafeMutablePointer<rlimit>?) -> Int32
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "prlimit") else { throw SpawnError("no prlimit in the C library") }
    var limit = rlimit(rlim_cur: rlim_t(count), rlim_max: rlim_t(count))
    guard unsafeBitCast(symbol, to: PRLimit.self)(pid, Int32(RLIMIT_NOFILE.rawValue), &limit, nil) == 0 else {
        throw SpawnError("prlimit: \(String(cString: strerror(errno)))")
    }
}
