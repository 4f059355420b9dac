import ArgumentParser
import Foundation

/// What a subscriber watches.
enum SubscriptionKind: String, ExpressibleByArgument, CaseIterable {
    /// reeld `subscribe` in actions mode: every action, none skipped.
    case actions
    /// reeld `subscribe` in value mode on one dispatcher's slice (`/c<k>`), coalesced.
    case value
    /// Redis `SUBSCRIBE` to the channel the publishers publish on.
    case redis
}

/// One subscribed connection: counts what it receives and how long after its send each delivery
/// arrived (the send time travels in the payload; see ``appendStampedValue(to:filler:at:)``).
struct Subscriber {
    var connection: Connection
    let kind: SubscriptionKind
    /// Whether the subscription is confirmed (its result, or Redis's `subscribe` reply, arrived).
    private(set) var ready = false
    /// Actions (reel actions mode), updates (value mode) or messages (Redis) received.
    private(set) var deliveries = 0
    /// The seq delivered last (reel).
    private(set) var seq: UInt64 = 0
    /// Wall-clock time of the last delivery, in ns.
    private(set) var lastDeliveryAt: UInt64 = 0

    /// - Parameters:
    ///   - shared: Subscribe to the shared feed (`shared: true`): updates name the feed.
    ///   - watched: In value mode, the path watched instead of the dispatcher's slice.
    init(socket path: String, kind: SubscriptionKind, index: Int, dispatchers: Int, shared: Bool = false, watching watched: String? = nil) throws {
        connection = try Connection(socket: path)
        self.kind = kind
        let sharing = shared ? #","shared":true"# : ""
        switch kind {
        case .actions:
            connection.queue(Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"mode":"actions"\#(sharing)}}"#.utf8) + [0x0A])
        case .value:
            let slice = watched ?? "/c\(index % dispatchers)"
            connection.queue(Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"path":"\#(slice)"\#(sharing)}}"#.utf8) + [0x0A])
        case .redis:
            connection.queue(Array("*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n".utf8))
        }
    }

    /// A value-mode subscriber of a path of its own that no dispatch changes (`/idle/k<index>`):
    /// what subscribers of quiet paths cost the server (`--idle-subscribers`).
    static func quiet(socket path: String, index: Int) throws -> Subscriber {
        try Subscriber(socket: path, kind: .value, index: index, dispatchers: 1, watching: "/idle/k\(index)")
    }

    /// Reads what arrived; `latency` gets the send-to-receipt time of each delivery, in ns.
    /// Returns `false` once the server closed the connection.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, latency: (UInt64) -> Void) throws -> Bool {
        let kind = self.kind
        var ready = self.ready, deliveries = self.deliveries, seq = self.seq
        var latencies: [UInt64] = []
        let now = wallClockNanoseconds()
        let open = try connection.read(into: buffer) { line in
            func sentAt(after marker: StaticString) -> UInt64? {
                guard let start = LineScan.end(of: marker, in: line) else { return nil }
                return LineScan.number(in: line, at: start)
            }
            switch kind {
            case .actions, .value:
                guard ready else {
                    // The result: {"jsonrpc":"2.0","id":1,"result":{"seq":S,…}}, or with
                    // "feed":"F" before the seq.
                    if LineScan.end(of: #""result":{"#, in: line) != nil, let start = LineScan.end(of: #""seq":"#, in: line) {
                        seq = LineScan.number(in: line, at: start) ?? 0
                        ready = true
                    }
                    return
                }
                // An update's own seq is its params' `"seq":` (members are in sorted order:
                // actions, [feed,] seq[, subscription] — the last one, after the actions' own —
                // or [feed,] seq[, subscription], value — the first one).
                guard let start = LineScan.end(of: #""seq":"#, in: line, last: kind == .actions),
                    let updateSeq = LineScan.number(in: line, at: start)
                else { return }
                deliveries += kind == .actions ? Int(updateSeq - seq) : 1
                seq = updateSeq
                if let sent = sentAt(after: #""value":"t"#), now > sent { latencies.append(now - sent) }
            case .redis:
                if !ready {
                    if line.first == UInt8(ascii: ":") { ready = true }  // the subscribe reply's count
                    return
                }
                // A message's payload line: t<19 digits>xxx…
                guard line.first == UInt8(ascii: "t"), let sent = LineScan.number(in: line, at: 1) else { return }
                deliveries += 1
                if now > sent { latencies.append(now - sent) }
            }
        }
        if deliveries > self.deliveries { lastDeliveryAt = now }
        self.ready = ready
        self.deliveries = deliveries
        self.seq = seq
        for value in latencies { latency(value) }
        return open
    }
}
