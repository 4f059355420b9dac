import ArgumentParser
import Foundation
import Histogram
import ReelClient
import ReelCore
import ReelJSON
import ReelStore
import Synchronization

extension ReelBench {
    /// A take-over under load (`reeld --take-over` beside a serving `reeld`, the binaries beside
    /// this one): a log of `takeOverSize` actions, `takeOverClients` clients dispatching
    /// continuously (one keyed dispatch at a time each, through the Swift client, which sends a
    /// dispatch answered "shutting down" again on the next daemon), then the take-over: how long
    /// it took, the longest any dispatch waited, and that every acknowledged dispatch is in the
    /// log once.
    func takeOver() async throws {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let path = try scratch("take-over")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = path + "/data", socket = path + "/reel.sock"
        do {
            let store = try Store(path: data, definition: .stock, options: StoreOptions(storage: .init(durable: false)), logger: Self.quietLogger)
            var seq = 0
            while seq < takeOverSize {
                let count = min(1_000, takeOverSize - seq)
                try await store.dispatch(batch: (seq..<(seq + count)).map { Self.setAction($0) })
                seq += count
            }
            await store.close()
        }
        let old = try Self.launch(bin + "/reeld", ["--data-dir", data, "--socket", socket, "--log-level", "warning"])
        while !Self.accepts(socket) { try await Task.sleep(for: .milliseconds(10)) }

        let clock = ContinuousClock()
        let control = LoadControl()
        let clients = takeOverClients
        let load = Task {
            try await withThrowingTaskGroup(of: [(ContinuousClock.Instant, Duration)].self) { tasks in
                for client in 0..<clients {
                    tasks.addTask {
                        let connection = try await ReelClient.connect(socketPath: socket)
                        var latencies: [(ContinuousClock.Instant, Duration)] = []
                        var n = 0
                        while !control.stop.load(ordering: .relaxed) {
                            n += 1
                            let start = clock.now
                            do {
                                _ = try await connection.dispatch(
                                    Action(type: "set", payload: ["path": .string("/c\(client)"), "value": .int(Int64(n))]),
                                    idempotencyKey: "c\(client)-\(n)"
                                )
                                latencies.append((start, clock.now - start))
                            } catch {
                                control.failures.withLock { $0.append("\(error)") }
                            }
                        }
                        await connection.close()
                        return latencies
                    }
                }
                var all: [(ContinuousClock.Instant, Duration)] = []
                for try await latencies in tasks { all += latencies }
                return all
            }
        }
        try await Task.sleep(for: .seconds(2))
        let takeOverStart = clock.now
        let new = try Self.launch(bin + "/reeld", ["--data-dir", data, "--socket", socket, "--log-level", ProcessInfo.processInfo.environment["REEL_BENCH_TAKE_OVER_LOG"] ?? "warning", "--take-over"])
        let oldStatus = await Self.exit(of: old)
        let takeOverEnd = clock.now
        try await Task.sleep(for: .seconds(2))
        control.stop.store(true, ordering: .relaxed)
        let latencies = try await load.value
        let check = try await ReelClient.connect(socketPath: socket)
        let latest = try await check.call(Method.Stats.self, StatsParams()).seq
        await check.close()
        new.terminate()
        let newStatus = await Self.exit(of: new)

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        for (_, latency) in latencies { _ = histogram.record(UInt64(latency.seconds * 1e6)) }
        let longest = latencies.max { $0.1 < $1.1 }
        let around = latencies.filter { $0.0 >= takeOverStart - .seconds(1) && $0.0 <= takeOverEnd + .seconds(1) }
        let acknowledged = UInt64(latencies.count)
        print(String(
            format: "take-over, %d actions, %d clients: the old reeld exited %.2f s after the new one started (status %d, new %d); %d dispatches, %.0f/s",
            takeOverSize, clients, (takeOverEnd - takeOverStart).seconds, oldStatus, newStatus, latencies.count,
            Double(latencies.count) / ((clock.now - takeOverStart).seconds + 2)
        ))
        let longestAround = around.map(\.1).max() ?? .zero
        print(String(
            format: "  longest wait around the take-over %.1f ms (%d dispatches sent from 1 s before the new reeld started to 1 s after the old one exited); over the whole run %.1f ms (sent %+.2f s from the new reeld's start); p99 %.2f ms, p99.9 %.2f ms",
            longestAround.seconds * 1000, around.count, (longest?.1.seconds ?? 0) * 1000, ((longest?.0 ?? takeOverStart) - takeOverStart).seconds,
            Double(histogram.valueAtPercentile(99)) / 1000, Double(histogram.valueAtPercentile(99.9)) / 1000
        ))
        let slowest = latencies.sorted { $0.1 > $1.1 }.prefix(5).map {
            String(format: "%.0f ms at %+.2f s", $0.1.seconds * 1000, ($0.0 - takeOverStart).seconds)
        }
        print("  slowest: \(slowest.joined(separator: ", ")) (time from the new reeld's start)")
        let failed = control.failures.withLock { $0 }
        let whole = latest == UInt64(takeOverSize) + acknowledged
        print("  errors: \(failed.count)\(failed.first.map { " (first: \($0))" } ?? ""); log \(latest) = \(takeOverSize) + \(acknowledged) acknowledged: \(whole ? "yes" : "NO")")
        guard failed.isEmpty, whole, oldStatus == 0, newStatus == 0 else {
            throw ValidationError("the take-over lost, repeated or refused dispatches, or a daemon failed: see above")
        }
    }

    static func launch(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        return process
    }

    /// The process's exit status, once it has ended.
    static func exit(of process: Process) async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(2)) }
        return process.terminationStatus
    }

    /// Whether something accepts connections at `path`.
    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            let bytes = Array(path.utf8)
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }
}

/// What the take-over's clients share: when to stop, and what failed.
private final class LoadControl: Sendable {
    let stop = Atomic<Bool>(false)
    let failures = Mutex<[String]>([])
}
