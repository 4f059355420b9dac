import Foundation
import Histogram
import NIOCore
import NIOPosix
import ReelCore
import ReelFraming
import ReelJSON
import ReelProtocol
import ReelServer
import ReelStore
import ServiceLifecycle

extension ReelBench {
    /// Clients dispatching over the Unix socket to an in-process server, each waiting for every
    /// answer before sending the next: throughput and the latency a client sees (durable acks).
    func socketDispatch(clients: Int, perClient: Int) async throws {
        let path = try scratch("socket")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try Store(path: path + "/data", definition: .stock, logger: Self.quietLogger)
        let server = ReelServer(
            configuration: ServerConfiguration(socketPath: path + "/reel.sock"), store: store,
            authorize: { _, _ in true }, logger: Self.quietLogger
        )
        let group = ServiceGroup(services: [server], logger: Self.quietLogger)
        let clock = ContinuousClock()
        var wall = Duration.zero
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { tasks in
            tasks.addTask { try await group.run(); return [] }
            while !FileManager.default.fileExists(atPath: path + "/reel.sock") {
                try await Task.sleep(for: .milliseconds(5))
            }
            let start = clock.now
            var clientTasks = 0
            for client in 0..<clients {
                clientTasks += 1
                tasks.addTask { try await Self.runClient(socketPath: path + "/reel.sock", client: client, count: perClient, clock: clock) }
            }
            var all: [Duration] = []
            for _ in 0..<clientTasks {
                if let result = try await tasks.next() { all += result }
            }
            wall = clock.now - start
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return all
        }
        await store.close()
        var histogram = Histogram<UInt64>(highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: .three)
        for latency in latencies { _ = histogram.record(UInt64(latency.seconds * 1e6)) }
        let statistics = store.statistics
        print(String(
            format: "socket dispatch, %d clients: %8.0f actions/s  latency p50 %.2f ms  p99 %.2f ms  (%.1f actions/commit)",
            clients, Double(latencies.count) / wall.seconds, Double(histogram.valueAtPercentile(50)) / 1000,
            Double(histogram.valueAtPercentile(99)) / 1000,
            Double(statistics.actionsCommitted) / Double(max(statistics.commits, 1))
        ))
    }

    private static func runClient(socketPath: String, client: Int, count: Int, clock: ContinuousClock) async throws -> [Duration] {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: socketPath) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(LineFramingHandler(maxLineLength: 1 << 20))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            var latencies: [Duration] = []
            latencies.reserveCapacity(count)
            for i in 0..<count {
                let request = RPCCall(Method.Dispatch.self, DispatchParams(action: patchAction(client * count + i))).request(id: .int(Int64(i)))
                let start = clock.now
                try await outbound.write(ByteBuffer(bytes: request.encodedLine()))
                guard try await responses.next() != nil else { break }
                latencies.append(clock.now - start)
            }
            return latencies
        }
    }
}
