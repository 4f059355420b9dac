import ArgumentParser
import Foundation
import Histogram

/// Drives a running `reeld` the way `redis-benchmark` drives Redis, so the two can be compared in
/// one run: N connections, each keeping up to `pipeline` dispatches in flight, every one a `set`
/// of a payload of the given size. One thread and `poll(2)`, as redis-benchmark does, so the load
/// generator costs little CPU next to the server it measures.
///
/// With `--subscribers N`, N more connections subscribe before the dispatches start (actions
/// mode, or value mode on one dispatcher's slice) and count what is delivered to them; with
/// `--redis` the same load is `PUBLISH` to a Redis channel and `SUBSCRIBE`rs (the fan-out
/// comparison). Every value starts with its wall-clock send time, so a subscriber measures each
/// delivery from the send of the dispatch (or publish) that caused it. With `--idle-subscribers N`,
/// N more connections subscribe to paths nothing changes and are held through the run. With
/// `--state-keys N`, the state holds N more keys before the run starts.
///
/// Prints one JSON line: `{"requests", "errors", "seconds", "perSecond", "p50Ms", "p99Ms", "maxMs",
/// "clientCPUMicrosPerRequest"}`, and with subscribers `"deliveries", "deliveriesPerSecond",
/// "deliveryP50Ms", "deliveryP99Ms"`.
@main
struct ReelLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reel-load",
        abstract: "Dispatch load over reeld's socket: connections × pipeline depth, with latency percentiles."
    )

    @Option(help: "The daemon's socket (or Redis's, with --redis).") var socket: String
    @Option(help: "Connections, each its own peer.") var connections = 1
    @Option(help: "Dispatches in flight per connection.") var pipeline = 1
    @Option(help: "Bytes of the value each action sets (at least 20: the send time).") var payloadBytes = 200
    @Option(help: "Dispatches in all (spread over the connections).") var requests = 10_000
    @Flag(help: "Give every dispatch an idempotency key (a retry-safe client).") var idempotencyKeys = false
    @Option(help: "Subscribed connections, counting deliveries.") var subscribers = 0
    @Option(help: "What they subscribe to: actions, value (reeld) or redis.") var subscription = SubscriptionKind.actions
    @Option(help: "More connections each subscribed (value mode) to a path of its own that no dispatch changes, held through the run: what quiet subscribers cost the server.") var idleSubscribers = 0
    @Flag(help: "Subscribers take the shared feed (subscribe with shared: true): one encoding of each update, the same bytes to every subscriber.") var shared = false
    @Option(help: "Where the subscribers connect, if not --socket: another node of a shared log, to measure how soon its readers see the dispatches.") var subscriberSocket: String?
    @Flag(help: "Speak RESP to Redis: PUBLISH instead of dispatch, SUBSCRIBE for subscribers.") var redis = false
    @Option(help: "Keys the state holds before the run (added by merges, not measured): checkpoints and copies of a large state.") var stateKeys = 0
    @Option(help: "Write every answer to this file as a line: when it arrived (ns of CLOCK_MONOTONIC, the clock of `perf record -k mono`), its latency (ns) and its connection's number, to see when a latency tail happens (Tools/vs-redis/answer-gaps).") var answersFile: String?

    mutating func validate() throws {
        guard connections > 0, pipeline > 0, requests >= connections, payloadBytes >= 0, subscribers >= 0, idleSubscribers >= 0 else {
            throw ValidationError("connections, pipeline and requests must be positive, requests at least one per connection")
        }
        if redis && subscription != .redis && subscribers > 0 {
            throw ValidationError("with --redis, subscribers are --subscription redis")
        }
        if redis && idempotencyKeys { throw ValidationError("--idempotency-keys is for reeld") }
        if redis && idleSubscribers > 0 { throw ValidationError("--idle-subscribers is for reeld") }
        if redis && stateKeys > 0 { throw ValidationError("--state-keys is for reeld") }
        guard stateKeys >= 0 else { throw ValidationError("--state-keys cannot be negative") }
    }

    func run() throws {
        if stateKeys > 0 { try StateKeys.add(stateKeys, socket: socket) }
        var readBuffer = [UInt8](repeating: 0, count: 1 << 16)
        var subscribed: [Subscriber] = []
        for index in 0..<subscribers {
            subscribed.append(try Subscriber(socket: subscriberSocket ?? socket, kind: redis ? .redis : subscription, index: index, dispatchers: connections, shared: shared))
        }
        try waitUntilSubscribed(&subscribed, buffer: &readBuffer)
        // Subscribed, then left alone: nothing is ever sent to them.
        var idle: [Subscriber] = []
        for index in 0..<idleSubscribers {
            idle.append(try Subscriber.quiet(socket: subscriberSocket ?? socket, index: index))
        }
        try waitUntilSubscribed(&idle, buffer: &readBuffer)

        var peers: [Dispatcher] = []
        for index in 0..<connections {
            let share = requests / connections + (index < requests % connections ? 1 : 0)
            peers.append(try Dispatcher(
                socket: socket, wire: redis ? .redisPublish : .reel, index: index, payloadBytes: payloadBytes, count: share,
                keyed: idempotencyKeys
            ))
        }
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var deliveryHistogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var errors = 0
        var answers: [AnswerRecord] = []
        if answersFile != nil { answers.reserveCapacity(requests) }
        let start = DispatchTime.now().uptimeNanoseconds
        let wallStart = wallClockNanoseconds()
        var open = peers.count
        // Every connection starts with its pipeline full; from then on a connection refills as its
        // answers arrive and writes at once, asking poll for writability only when a write did not
        // take everything (as redis-benchmark does: no poll before each write).
        var descriptors = peers.map { pollfd(fd: $0.connection.fd, events: Int16(POLLIN), revents: 0) }
            + subscribed.map { pollfd(fd: $0.connection.fd, events: Int16(POLLIN), revents: 0) }
        for index in peers.indices {
            peers[index].fill(pipeline: pipeline)
            try peers[index].connection.write()
        }
        var dispatchEnd: UInt64?
        var quietSince = DispatchTime.now().uptimeNanoseconds
        while true {
            if open == 0 {
                let now = DispatchTime.now().uptimeNanoseconds
                if dispatchEnd == nil { dispatchEnd = now }
                let expected = expectedDeliveries(peers: peers)
                let caughtUp = subscribed.allSatisfy { subscriber in
                    switch subscriber.kind {
                    case .actions: subscriber.seq >= expected.seq
                    case .redis: subscriber.deliveries >= expected.messages
                    case .value: false  // coalesced: caught up once nothing more comes
                    }
                }
                if caughtUp || now - quietSince > 300_000_000 || now - dispatchEnd! > 10_000_000_000 { break }
            }
            for index in peers.indices where descriptors[index].fd >= 0 {
                descriptors[index].events = Int16(POLLIN) | (peers[index].connection.wantsToWrite ? Int16(POLLOUT) : 0)
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), open == 0 ? 50 : 10_000)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 && open == 0 { continue }
            guard ready > 0 else { throw ValidationError("no answer from \(socket) for 10 s") }
            for index in descriptors.indices where descriptors[index].revents != 0 {
                let events = descriptors[index].revents
                descriptors[index].revents = 0
                if index >= peers.count {
                    let subscriber = index - peers.count
                    let alive = try readBuffer.withUnsafeMutableBytes { buffer in
                        try subscribed[subscriber].read(into: buffer) { deliveryHistogram.record($0) }
                    }
                    quietSince = DispatchTime.now().uptimeNanoseconds
                    if !alive { throw ValidationError("the server closed a subscriber's connection") }
                    continue
                }
                if events & Int16(POLLOUT) != 0 { try peers[index].connection.write() }
                guard events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
                let now = DispatchTime.now().uptimeNanoseconds
                let alive = try readBuffer.withUnsafeMutableBytes { buffer in
                    try peers[index].read(into: buffer) { sentAt, succeeded in
                        histogram.record(now - sentAt)
                        if answersFile != nil { answers.append((now, now - sentAt, index)) }
                        if !succeeded { errors += 1 }
                    }
                }
                if !alive { throw ValidationError("the server closed a connection with \(peers[index].unanswered) answers owed") }
                if peers[index].isDone {
                    open -= 1
                    descriptors[index].fd = -1
                } else {
                    peers[index].fill(pipeline: pipeline)
                    try peers[index].connection.write()
                }
            }
        }
        let seconds = Double((dispatchEnd ?? DispatchTime.now().uptimeNanoseconds) - start) / 1e9
        func ms(_ histogram: Histogram<UInt64>, _ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1e6 }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuSeconds = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        var summary: [String: Double] = [
            "requests": Double(requests), "errors": Double(errors), "seconds": seconds,
            "perSecond": Double(requests) / seconds, "p50Ms": ms(histogram, 50), "p99Ms": ms(histogram, 99),
            "maxMs": Double(histogram.max) / 1e6, "clientCPUMicrosPerRequest": cpuSeconds * 1e6 / Double(requests),
        ]
        if !subscribed.isEmpty {
            let deliveries = subscribed.reduce(0) { $0 + $1.deliveries }
            let last = subscribed.map(\.lastDeliveryAt).max() ?? wallStart
            summary["subscribers"] = Double(subscribed.count)
            summary["deliveries"] = Double(deliveries)
            summary["deliveriesPerSecond"] = Double(deliveries) / (Double(max(last, wallStart + 1) - wallStart) / 1e9)
            summary["deliveryP50Ms"] = ms(deliveryHistogram, 50)
            summary["deliveryP99Ms"] = ms(deliveryHistogram, 99)
        }
        if let answersFile { try write(answers, to: answersFile) }
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
        for peer in peers { close(peer.connection.fd) }
        for subscriber in subscribed + idle { close(subscriber.connection.fd) }
        if errors > 0 { throw ExitCode(1) }
    }

    /// An answer as `--answers-file` writes it: when it arrived, how long it took, on which connection.
    typealias AnswerRecord = (arrived: UInt64, latency: UInt64, connection: Int)

    /// Writes `answers` for `--answers-file`, their arrival on CLOCK_MONOTONIC (the arrival was
    /// read from `DispatchTime`, whose clock may differ by an offset, taken here).
    private func write(_ answers: [AnswerRecord], to path: String) throws {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let offset = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) - Int64(DispatchTime.now().uptimeNanoseconds)
        var text = ""
        text.reserveCapacity(answers.count * 32)
        for answer in answers { text += "\(Int64(answer.arrived) + offset) \(answer.latency) \(answer.connection)\n" }
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw ValidationError("cannot write \(path)")
        }
    }

    /// What the subscribers should have received once every dispatch is answered: the highest seq
    /// answered (reel), every publish (Redis).
    private func expectedDeliveries(peers: [Dispatcher]) -> (seq: UInt64, messages: Int) {
        (peers.map(\.highestSeq).max() ?? 0, requests)
    }

    /// Sends every subscription and waits (10 s at most) until each is confirmed.
    private func waitUntilSubscribed(_ subscribed: inout [Subscriber], buffer: inout [UInt8]) throws {
        guard !subscribed.isEmpty else { return }
        for index in subscribed.indices { try subscribed[index].connection.write() }
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        var descriptors = subscribed.map { pollfd(fd: $0.connection.fd, events: Int16(POLLIN), revents: 0) }
        while !subscribed.allSatisfy(\.ready) {
            guard DispatchTime.now().uptimeNanoseconds < deadline else { throw ValidationError("subscriptions not confirmed within 10 s") }
            for index in subscribed.indices where subscribed[index].connection.wantsToWrite { try subscribed[index].connection.write() }
            _ = poll(&descriptors, nfds_t(descriptors.count), 100)
            for index in descriptors.indices where descriptors[index].revents != 0 {
                descriptors[index].revents = 0
                let alive = try buffer.withUnsafeMutableBytes { try subscribed[index].read(into: $0) { _ in } }
                if !alive { throw ValidationError("the server closed a subscriber's connection") }
            }
        }
    }
}
